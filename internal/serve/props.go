package serve

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"

	"github.com/encryptfs/encryptfs/internal/fault"
	"golang.org/x/net/webdav"
	"golang.org/x/sys/unix"
)

// Dead properties (PROPPATCH: what a client sets on a resource, such as
// Windows' Win32 timestamps and Finder's metadata) are kept in one
// extended attribute of the file or directory, encrypted by the vault as
// every xattr is, so that they move with it and nothing of them shows in
// CIPHERDIR.
const (
	propsXattr = "user.encryptfs.webdav-props"
	maxProps   = 256 // per resource: a bound on what a client may pile up
)

// errTooManyProps refuses a PROPPATCH beyond maxProps.
var errTooManyProps = errors.New("serve: too many dead properties")

// storedProp is one dead property in the xattr (JSON).
type storedProp struct {
	Space, Local, Lang string
	XML                []byte
}

// deadProps reads the dead properties of name. A resource without them,
// and a vault whose backing store has no xattrs, has none; one whose
// xattr does not authenticate is an error.
func (f *vaultFS) deadProps(name string) (map[xml.Name]webdav.Property, error) {
	data, err := f.v.GetXattr(name, propsXattr)
	if errors.Is(err, unix.ENODATA) || fault.Of(err) == fault.NotSupported {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var stored []storedProp
	if err := json.Unmarshal(data, &stored); err != nil || len(stored) > maxProps {
		return nil, fmt.Errorf("%w: %s: dead properties malformed", ErrCorruptProps, name)
	}
	m := make(map[xml.Name]webdav.Property, len(stored))
	for _, p := range stored {
		n := xml.Name{Space: p.Space, Local: p.Local}
		m[n] = webdav.Property{XMLName: n, Lang: p.Lang, InnerXML: p.XML}
	}
	return m, nil
}

// ErrCorruptProps: the dead properties' xattr decrypted but does not
// parse (only the vault's key could have written it).
var ErrCorruptProps = fault.New(fault.Corrupt, "serve: dead properties malformed")

// patch applies a PROPPATCH to name's dead properties, under f's lock
// (a read, change and write of one xattr).
func (f *vaultFS) patch(name string, patches []webdav.Proppatch) ([]webdav.Propstat, error) {
	if f.readOnly {
		return nil, errReadOnly
	}
	f.propsMu.Lock()
	defer f.propsMu.Unlock()
	m, err := f.deadProps(name)
	if err != nil {
		return nil, err
	}
	if m == nil {
		m = map[xml.Name]webdav.Property{}
	}
	ps := webdav.Propstat{Status: http.StatusOK}
	for _, p := range patches {
		for _, prop := range p.Props {
			ps.Props = append(ps.Props, webdav.Property{XMLName: prop.XMLName})
			if p.Remove {
				delete(m, prop.XMLName)
			} else {
				m[prop.XMLName] = prop
			}
		}
	}
	if len(m) > maxProps {
		return nil, errTooManyProps
	}
	if len(m) == 0 {
		err := f.v.RemoveXattr(name, propsXattr)
		if errors.Is(err, unix.ENODATA) {
			err = nil
		}
		return []webdav.Propstat{ps}, err
	}
	stored := make([]storedProp, 0, len(m))
	for n, p := range m {
		stored = append(stored, storedProp{Space: n.Space, Local: n.Local, Lang: p.Lang, XML: p.InnerXML})
	}
	data, err := json.Marshal(stored)
	if err != nil {
		return nil, err
	}
	if err := f.v.SetXattr(name, propsXattr, data); err != nil {
		return nil, err
	}
	return []webdav.Propstat{ps}, nil
}

// DeadProps and Patch make an open file a webdav.DeadPropsHolder.
func (f *file) DeadProps() (map[xml.Name]webdav.Property, error) {
	return f.memo.deadProps(f.Name(), func() (map[xml.Name]webdav.Property, error) { return f.fs.deadProps(f.Name()) })
}

// Patch sets or removes dead properties of the file.
func (f *file) Patch(p []webdav.Proppatch) ([]webdav.Propstat, error) {
	return f.fs.patch(f.Name(), p)
}

// DeadProps and Patch make a collection a webdav.DeadPropsHolder.
func (d *dirFile) DeadProps() (map[xml.Name]webdav.Property, error) {
	return d.memo.deadProps(d.name, func() (map[xml.Name]webdav.Property, error) { return d.fs.deadProps(d.name) })
}

// Patch sets or removes dead properties of the collection.
func (d *dirFile) Patch(p []webdav.Proppatch) ([]webdav.Propstat, error) {
	return d.fs.patch(d.name, p)
}
