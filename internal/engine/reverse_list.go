package engine

import (
	"bytes"
	"errors"
	"slices"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// ViewKind is what an entry of the reverse view shows. Its value enters
// the keyed inode numbers of the view (Reverse.InodeNumber), so the
// constants must not be renumbered.
type ViewKind uint8

// The kinds of view entries.
const (
	ViewDir         ViewKind = iota + 1 // a plaintext directory
	ViewFile                            // a plaintext regular file, shown encrypted
	ViewSymlink                         // a plaintext symlink, target encrypted
	ViewSpecial                         // a fifo, socket or device node, shown as is
	ViewDirID                           // virtual encryptfs.dirid of directory rel
	ViewNameSidecar                     // virtual encryptfs.long.<H>.name of entry rel
	ViewLinkSidecar                     // virtual encryptfs.link.<H> of symlink rel
	ViewConfig                          // virtual encryptfs.conf in the root
)

// Virtual reports whether the kind is generated rather than a plaintext
// object.
func (k ViewKind) Virtual() bool { return k >= ViewDirID }

// ViewEntry is one entry of a view directory.
type ViewEntry struct {
	Name string      // the name in the view
	Kind ViewKind    // what it shows
	Rel  string      // the plaintext object it shows or describes
	St   unix.Stat_t // lstat of that object
}

// JoinRel appends a name to a relative plaintext directory path.
func JoinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// splitRel returns the parent directory and base name of a non-root rel.
func splitRel(rel string) (dir, base string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

// kindOf maps a plaintext file type to the view kind.
func kindOf(mode uint32) ViewKind {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return ViewDir
	case unix.S_IFREG:
		return ViewFile
	case unix.S_IFLNK:
		return ViewSymlink
	}
	return ViewSpecial
}

// encName returns the encrypted name of rel's base name in its directory
// and the backing (view) name: the long-name form when it is too long.
func (v *ReverseView) encName(rel string) (enc, viewName string, long bool, err error) {
	dir, base := splitRel(rel)
	enc, err = v.r.names.Encrypt(v.r.derive.DirID(dir), base)
	if err != nil {
		return "", "", false, err
	}
	viewName, long = names.Backing(enc)
	return enc, viewName, long, nil
}

// ViewName returns the name rel's base name shows in its directory.
func (v *ReverseView) ViewName(rel string) (string, error) {
	_, viewName, _, err := v.encName(rel)
	return viewName, err
}

// linkBlob encrypts the target of the plaintext symlink rel bound to its
// directory's derived ID and its name, with the derived nonce.
func (v *ReverseView) linkBlob(rel, target string) ([]byte, error) {
	dir, base := splitRel(rel)
	dirID := v.r.derive.DirID(dir)
	nonce := v.r.derive.SymlinkNonce(dirID, base, target)
	return v.r.links.Seal(dirID, base, target, bytes.NewReader(nonce))
}

// viewTarget is the view's target of symlink rel: the encoded blob, or the
// long-target marker when the blob lives in a sidecar.
func (v *ReverseView) viewTarget(rel string) (target string, blob []byte, sidecar bool, err error) {
	plain, err := v.readlink(rel)
	if err != nil {
		return "", nil, false, err
	}
	blob, err = v.linkBlob(rel, plain)
	if err != nil {
		return "", nil, false, err
	}
	target, sidecar = meta.EncodeTarget(blob)
	return target, blob, sidecar, nil
}

// Target is the view's target of symlink rel: its plaintext target sealed
// and encoded, or the long-target marker when the sealed target is shown
// in a sidecar.
func (v *ReverseView) Target(rel string) (string, error) {
	target, _, _, err := v.viewTarget(rel)
	return target, err
}

// List computes the whole view of plaintext directory dirRel: its
// entries under their encrypted names, the long-name and long-target
// sidecars, encryptfs.dirid and, in the root, encryptfs.conf. Sorted by
// name, so the listing is the same on every mount.
func (v *ReverseView) List(dirRel string) ([]ViewEntry, error) {
	fd, err := backing.OpenDir(v.rootfd, dirRel)
	if err != nil {
		return nil, err
	}
	defer backing.Close(fd)
	dirSt, err := backing.Fstat(fd)
	if err != nil {
		return nil, err
	}
	out := []ViewEntry{{Name: names.DirIDFile, Kind: ViewDirID, Rel: dirRel, St: dirSt}}
	if v.beyondFS(&dirSt) {
		return out, nil
	}
	ents, err := backing.ReadDir(fd)
	if err != nil {
		return nil, err
	}
	if dirRel == "" {
		out = append(out, ViewEntry{Name: names.ConfigFile, Kind: ViewConfig, St: v.configStat()})
	}
	for _, de := range ents {
		if out, err = v.appendEntry(out, fd, dirRel, de.Name); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b ViewEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// appendEntry appends to out the view entries of plaintext entry name of
// directory fd (dirRel): none if it is excluded or gone, else the entry
// and its sidecars.
func (v *ReverseView) appendEntry(out []ViewEntry, fd int, dirRel, name string) ([]ViewEntry, error) {
	rel := JoinRel(dirRel, name)
	if v.Excluded(rel) {
		return out, nil
	}
	st, err := backing.Fstatat(fd, name)
	if errors.Is(err, unix.ENOENT) {
		return out, nil // removed since getdents
	} else if err != nil {
		return nil, err
	}
	_, viewName, long, err := v.encName(rel)
	if err != nil {
		v.logf("readdir %q: %v", rel, err)
		return out, nil
	}
	k := kindOf(st.Mode)
	out = append(out, ViewEntry{Name: viewName, Kind: k, Rel: rel, St: st})
	if long {
		out = append(out, ViewEntry{Name: names.SidecarName(viewName), Kind: ViewNameSidecar, Rel: rel, St: st})
	}
	if k == ViewSymlink {
		target, err := backing.Readlinkat(fd, name)
		if err != nil {
			return nil, err
		}
		if len(target) > meta.MaxInlineTarget {
			out = append(out, ViewEntry{Name: meta.SymlinkSidecarName(viewName), Kind: ViewLinkSidecar, Rel: rel, St: st})
		}
	}
	return out, nil
}

// Lookup finds view entry name in plaintext directory dirRel. Encrypted
// short names are decrypted directly; reserved names (sidecars) are found
// by listing the directory.
func (v *ReverseView) Lookup(dirRel, name string) (ViewEntry, error) {
	switch {
	case name == names.DirIDFile:
		st, err := v.Lstat(dirRel)
		return ViewEntry{Name: name, Kind: ViewDirID, Rel: dirRel, St: st}, err
	case names.IsReserved(name):
		ents, err := v.List(dirRel)
		if err != nil {
			return ViewEntry{}, err
		}
		i, found := slices.BinarySearchFunc(ents, name, func(e ViewEntry, n string) int { return strings.Compare(e.Name, n) })
		if !found {
			return ViewEntry{}, ErrNoEntry
		}
		return ents[i], nil
	}
	if v.oneFS {
		if st, err := v.Lstat(dirRel); err != nil || v.beyondFS(&st) {
			return ViewEntry{}, ErrNoEntry // shown empty (see List)
		}
	}
	plain, err := v.r.names.Decrypt(v.r.derive.DirID(dirRel), name)
	if err != nil {
		return ViewEntry{}, ErrNoEntry // not a name this directory can show
	}
	rel := JoinRel(dirRel, plain)
	if v.Excluded(rel) {
		return ViewEntry{}, ErrNoEntry
	}
	st, err := v.Lstat(rel)
	if err != nil {
		return ViewEntry{}, err
	}
	return ViewEntry{Name: name, Kind: kindOf(st.Mode), Rel: rel, St: st}, nil
}

// Restat refreshes the plaintext stat behind a view entry of kind k at rel
// and checks that the object still has the type the entry was found with
// (ESTALE: replaced by another type of file).
func (v *ReverseView) Restat(k ViewKind, rel string) (unix.Stat_t, error) {
	if k == ViewConfig {
		return v.configStat(), nil
	}
	st, err := v.Lstat(rel)
	if err != nil {
		return st, err
	}
	switch k {
	case ViewDir, ViewFile, ViewSymlink, ViewSpecial:
		if kindOf(st.Mode) != k {
			return st, ErrStale // replaced by another type of file
		}
	case ViewDirID:
		if kindOf(st.Mode) != ViewDir {
			return st, ErrStale
		}
	case ViewLinkSidecar:
		if kindOf(st.Mode) != ViewSymlink {
			return st, ErrStale
		}
	}
	return st, nil
}

// Content computes the content of a virtual file of kind k describing rel.
func (v *ReverseView) Content(k ViewKind, rel string) ([]byte, error) {
	switch k {
	case ViewDirID:
		return v.r.derive.DirID(rel), nil
	case ViewNameSidecar:
		enc, _, long, err := v.encName(rel)
		if err != nil {
			return nil, err
		}
		if !long {
			return nil, ErrStale
		}
		return []byte(enc), nil
	case ViewLinkSidecar:
		_, blob, sidecar, err := v.viewTarget(rel)
		if err != nil {
			return nil, err
		}
		if !sidecar {
			return nil, ErrStale // the target got short
		}
		return blob, nil
	case ViewConfig:
		return v.config, nil
	}
	return nil, ErrNotVirtual
}

// MaxNameLen is the longest name in the view (statfs's f_namelen): that of
// a backing name.
const MaxNameLen = names.MaxBackingLen
