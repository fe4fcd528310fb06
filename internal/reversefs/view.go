package reversefs

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// kind is what a view entry shows.
type kind uint8

const (
	kindDir         kind = iota + 1 // a plaintext directory
	kindFile                        // a plaintext regular file, shown encrypted
	kindSymlink                     // a plaintext symlink, target encrypted
	kindSpecial                     // a fifo, socket or device node, shown as is
	kindDirID                       // virtual encryptfs.dirid of directory rel
	kindNameSidecar                 // virtual encryptfs.long.<H>.name of entry rel
	kindLinkSidecar                 // virtual encryptfs.link.<H> of symlink rel
	kindConfig                      // virtual encryptfs.conf in the root
)

// virtual reports whether the kind is generated rather than a plaintext
// object.
func (k kind) virtual() bool { return k >= kindDirID }

// viewEntry is one entry of a view directory.
type viewEntry struct {
	name string      // the name in the view
	kind kind        // what it shows
	rel  string      // the plaintext object it shows or describes
	st   unix.Stat_t // lstat of that object
}

// join appends a name to a relative plaintext directory path.
func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// split returns the parent directory and base name of a non-root rel.
func split(rel string) (dir, base string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

// kindOf maps a plaintext file type to the view kind.
func kindOf(mode uint32) kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return kindDir
	case unix.S_IFREG:
		return kindFile
	case unix.S_IFLNK:
		return kindSymlink
	}
	return kindSpecial
}

// withParent opens the parent directory of the non-root rel and calls f
// with its fd and rel's base name.
func (r *Root) withParent(rel string, f func(pfd int, base string) error) error {
	dir, base := split(rel)
	pfd, err := backing.OpenDir(r.rootfd, dir)
	if err != nil {
		return err
	}
	defer backing.Close(pfd)
	return f(pfd, base)
}

// lstat stats the plaintext object at rel without following a symlink.
func (r *Root) lstat(rel string) (st unix.Stat_t, err error) {
	if rel == "" {
		return backing.Fstat(r.rootfd)
	}
	err = r.withParent(rel, func(pfd int, base string) error {
		st, err = backing.Fstatat(pfd, base)
		return err
	})
	return st, err
}

// encName returns the encrypted name of rel's base name in its directory
// and the backing (view) name: the long-name form when it is too long.
func (r *Root) encName(rel string) (enc, viewName string, long bool, err error) {
	dir, base := split(rel)
	enc, err = r.names.Encrypt(r.derive.DirID(dir), base)
	if err != nil {
		return "", "", false, err
	}
	viewName, long = names.Backing(enc)
	return enc, viewName, long, nil
}

// linkBlob encrypts the target of the plaintext symlink rel bound to its
// directory's derived ID and its name, with the derived nonce.
func (r *Root) linkBlob(rel, target string) ([]byte, error) {
	dir, base := split(rel)
	dirID := r.derive.DirID(dir)
	nonce := r.derive.SymlinkNonce(dirID, base, target)
	return r.links.Seal(dirID, base, target, bytes.NewReader(nonce))
}

// readlink reads the plaintext target of symlink rel.
func (r *Root) readlink(rel string) (target string, err error) {
	err = r.withParent(rel, func(pfd int, base string) error {
		target, err = backing.Readlinkat(pfd, base)
		return err
	})
	return target, err
}

// viewTarget is the view's target of symlink rel: the encoded blob, or the
// long-target marker when the blob lives in a sidecar.
func (r *Root) viewTarget(rel string) (target string, blob []byte, sidecar bool, err error) {
	plain, err := r.readlink(rel)
	if err != nil {
		return "", nil, false, err
	}
	blob, err = r.linkBlob(rel, plain)
	if err != nil {
		return "", nil, false, err
	}
	target, sidecar = meta.EncodeTarget(blob)
	return target, blob, sidecar, nil
}

// list computes the whole view of plaintext directory dirRel: its
// entries under their encrypted names, the long-name and long-target
// sidecars, encryptfs.dirid and, in the root, encryptfs.conf. Sorted by
// name, so the listing is the same on every mount.
func (r *Root) list(dirRel string) ([]viewEntry, error) {
	fd, err := backing.OpenDir(r.rootfd, dirRel)
	if err != nil {
		return nil, err
	}
	defer backing.Close(fd)
	dirSt, err := backing.Fstat(fd)
	if err != nil {
		return nil, err
	}
	out := []viewEntry{{name: names.DirIDFile, kind: kindDirID, rel: dirRel, st: dirSt}}
	if r.beyondFS(&dirSt) {
		return out, nil
	}
	ents, err := backing.ReadDir(fd)
	if err != nil {
		return nil, err
	}
	if dirRel == "" {
		out = append(out, viewEntry{name: names.ConfigFile, kind: kindConfig, st: r.configStat()})
	}
	for _, de := range ents {
		rel := join(dirRel, de.Name)
		if r.excluded(rel) {
			continue
		}
		st, err := backing.Fstatat(fd, de.Name)
		if errors.Is(err, unix.ENOENT) {
			continue // removed since getdents
		} else if err != nil {
			return nil, err
		}
		_, viewName, long, err := r.encName(rel)
		if err != nil {
			r.logf("readdir %q: %v", rel, err)
			continue
		}
		k := kindOf(st.Mode)
		out = append(out, viewEntry{name: viewName, kind: k, rel: rel, st: st})
		if long {
			out = append(out, viewEntry{name: names.SidecarName(viewName), kind: kindNameSidecar, rel: rel, st: st})
		}
		if k == kindSymlink {
			target, err := backing.Readlinkat(fd, de.Name)
			if err != nil {
				return nil, err
			}
			if len(target) > meta.MaxInlineTarget {
				out = append(out, viewEntry{name: meta.SymlinkSidecarName(viewName), kind: kindLinkSidecar, rel: rel, st: st})
			}
		}
	}
	slices.SortFunc(out, func(a, b viewEntry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// lookup finds view entry name in plaintext directory dirRel. Encrypted
// short names are decrypted directly; reserved names (sidecars) are found
// by listing the directory.
func (r *Root) lookup(dirRel, name string) (viewEntry, error) {
	switch {
	case name == names.DirIDFile:
		st, err := r.lstat(dirRel)
		return viewEntry{name: name, kind: kindDirID, rel: dirRel, st: st}, err
	case names.IsReserved(name):
		ents, err := r.list(dirRel)
		if err != nil {
			return viewEntry{}, err
		}
		i, found := slices.BinarySearchFunc(ents, name, func(e viewEntry, n string) int { return strings.Compare(e.name, n) })
		if !found {
			return viewEntry{}, syscall.ENOENT
		}
		return ents[i], nil
	}
	if r.oneFS {
		if st, err := r.lstat(dirRel); err != nil || r.beyondFS(&st) {
			return viewEntry{}, syscall.ENOENT // shown empty (see list)
		}
	}
	plain, err := r.names.Decrypt(r.derive.DirID(dirRel), name)
	if err != nil {
		return viewEntry{}, syscall.ENOENT // not a name this directory can show
	}
	rel := join(dirRel, plain)
	if r.excluded(rel) {
		return viewEntry{}, syscall.ENOENT
	}
	st, err := r.lstat(rel)
	if err != nil {
		return viewEntry{}, err
	}
	return viewEntry{name: name, kind: kindOf(st.Mode), rel: rel, st: st}, nil
}

// restat refreshes the plaintext stat behind a node of kind k at rel and
// checks that the object still has the type the node was created with.
func (r *Root) restat(k kind, rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	var err error
	if k == kindConfig {
		return r.configStat(), nil
	}
	st, err = r.lstat(rel)
	if err != nil {
		return st, err
	}
	switch k {
	case kindDir, kindFile, kindSymlink, kindSpecial:
		if kindOf(st.Mode) != k {
			return st, syscall.ESTALE // replaced by another type of file
		}
	case kindDirID:
		if kindOf(st.Mode) != kindDir {
			return st, syscall.ESTALE
		}
	case kindLinkSidecar:
		if kindOf(st.Mode) != kindSymlink {
			return st, syscall.ESTALE
		}
	}
	return st, nil
}

// configStat returns the attributes shown for encryptfs.conf: those of
// the reverse config file. The view serves the bytes read at mount time,
// so if the file has gone meanwhile it keeps showing them, with the root
// directory's owner and times and mode 0400.
func (r *Root) configStat() unix.Stat_t {
	st, err := backing.Fstatat(r.rootfd, ConfigName)
	if err != nil {
		r.logf("stat %s: %v (serving the config read at mount time)", ConfigName, err)
		st, _ = backing.Fstat(r.rootfd)
		st.Mode = unix.S_IFREG | 0o400
	}
	return st
}

// virtualData computes the content of a virtual file.
func (r *Root) virtualData(k kind, rel string) ([]byte, error) {
	switch k {
	case kindDirID:
		return r.derive.DirID(rel), nil
	case kindNameSidecar:
		enc, _, long, err := r.encName(rel)
		if err != nil {
			return nil, err
		}
		if !long {
			return nil, syscall.ESTALE
		}
		return []byte(enc), nil
	case kindLinkSidecar:
		_, blob, sidecar, err := r.viewTarget(rel)
		if err != nil {
			return nil, err
		}
		if !sidecar {
			return nil, syscall.ESTALE // the target got short
		}
		return blob, nil
	case kindConfig:
		return r.config, nil
	}
	return nil, syscall.EINVAL
}
