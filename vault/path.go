package vault

import (
	"errors"
	"path"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// dirRef is an open backing directory and its ID.
type dirRef struct {
	fd    int
	id    []byte
	owned bool // fd must be closed (it is not the vault's root fd)
	// place is where the directory is bound (location binding): it
	// checks conflict copies of its ID file (tree.AltDirIDsAt).
	place core.Place
}

// placeFunc is d's place for the tree's *At calls.
func (d dirRef) placeFunc() tree.DirPlace {
	return func() (core.Place, error) { return d.place, nil }
}

func (d dirRef) release() {
	if d.owned {
		backing.Close(d.fd)
	}
}

// entryRef is the last component of a path: its parent directory and its
// encrypted name.
type entryRef struct {
	parent dirRef
	name   tree.Name
}

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
// the mount does (tree.Resolve: conflict copies included, undecryptable
// entries not). Symlinks are never followed (the backing open refuses
// them).
func (v *Vault) openDir(components []string) (dirRef, error) {
	if err := v.checkOpen(); err != nil {
		return dirRef{}, err
	}
	id, err := v.tree.ReadRootDirID(v.rootfd)
	if err != nil {
		return dirRef{}, err
	}
	d := dirRef{fd: v.rootfd, id: id, place: v.tree.RootPlace()}
	for _, c := range components {
		n, _, err := v.tree.ResolveAt(d.fd, d.id, d.placeFunc(), c, false)
		if err != nil {
			d.release()
			return dirRef{}, err
		}
		sub, err := backing.OpenSubdir(d.fd, n.Backing)
		d.release()
		if err != nil {
			return dirRef{}, err
		}
		p := v.tree.Place(d.id, n)
		id, err := v.tree.ReadDirIDAt(sub, p)
		if err != nil {
			backing.Close(sub)
			return dirRef{}, err
		}
		d = dirRef{fd: sub, id: id, owned: true, place: p}
	}
	return d, nil
}

// resolve finds the parent directory and encrypted name of p, which must not
// be the root: the existing entry shown as p's last component
// (tree.Resolve), or, if there is none, the name a new entry gets. An
// alias found this way is read-only (tree.Name.ReadOnly).
func (v *Vault) resolve(p string) (entryRef, error) {
	comps := split(p)
	if len(comps) == 0 {
		return entryRef{}, unix.EINVAL
	}
	d, err := v.openDir(comps[:len(comps)-1])
	if err != nil {
		return entryRef{}, err
	}
	last := comps[len(comps)-1]
	n, _, err := v.tree.ResolveAt(d.fd, d.id, d.placeFunc(), last, false)
	if errors.Is(err, tree.ErrNotFound) {
		n, err = v.tree.Name(d.id, last)
	}
	if err != nil {
		d.release()
		return entryRef{}, err
	}
	return entryRef{parent: d, name: n}, nil
}
