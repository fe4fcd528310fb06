package vault

import (
	"path"
	"strings"

	"github.com/encryptfs/encryptfs/internal/engine"
	"golang.org/x/sys/unix"
)

// entryRef is the last component of a path: its open parent directory and
// its encrypted name. release closes the parent.
type entryRef struct {
	parent *engine.Dir
	name   engine.Name
}

func (r entryRef) release() { r.parent.Close() }

// split cleans p and returns its components ("" and "/" give none).
func split(p string) []string {
	clean := path.Clean("/" + p)
	if clean == "/" {
		return nil
	}
	return strings.Split(clean[1:], "/")
}

// checkOpen returns ErrClosed after Close.
func (v *Vault) checkOpen() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return ErrClosed
	}
	return nil
}

// openDir walks the directory components from the root, finding each as
// the mount does (engine.Dir.Lookup: conflict copies included,
// undecryptable entries not). Symlinks are never followed (the backing
// open refuses them).
func (v *Vault) openDir(components []string) (*engine.Dir, error) {
	if err := v.checkOpen(); err != nil {
		return nil, err
	}
	d, err := v.eng.Root()
	if err != nil {
		return nil, err
	}
	for _, c := range components {
		n, _, err := d.Lookup(c, false)
		if err != nil {
			d.Close()
			return nil, err
		}
		sub, err := d.Sub(n)
		d.Close()
		if err != nil {
			return nil, err
		}
		d = sub
	}
	return d, nil
}

// resolve finds the parent directory and encrypted name of p, which must not
// be the root: the existing entry shown as p's last component
// (engine.Dir.Resolve), or, if there is none, the name a new entry gets. An
// alias found this way is read-only (Name.ReadOnly).
func (v *Vault) resolve(p string) (entryRef, error) {
	comps := split(p)
	if len(comps) == 0 {
		return entryRef{}, unix.EINVAL
	}
	d, err := v.openDir(comps[:len(comps)-1])
	if err != nil {
		return entryRef{}, err
	}
	n, err := d.Resolve(comps[len(comps)-1])
	if err != nil {
		d.Close()
		return entryRef{}, err
	}
	return entryRef{parent: d, name: n}, nil
}
