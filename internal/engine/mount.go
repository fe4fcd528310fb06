package engine

import (
	"errors"

	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// What a door that keeps directory fds of its own needs (the mount caches
// them in its nodes, and walks down from the root itself when it has none:
// internal/forwardfs, dirfd.go): names and places computed from a
// directory ID alone, and the ID of a directory fd read and checked.

// ErrReadOnly: an alias (a sync tool's conflict copy or an undecryptable
// entry) is not changed in place; it may be read, renamed to a name of
// its own, or removed (EROFS at the doors).
var ErrReadOnly = tree.ErrReadOnly

// Name is the name a new entry plain gets in the directory with ID dirID
// (its encryption, no lookup).
func (v *Vault) Name(dirID []byte, plain string) (Name, error) { return v.tree.Name(dirID, plain) }

// Place is where entry n of the directory with ID dirID is bound.
func (v *Vault) Place(dirID []byte, n Name) Place { return v.tree.Place(dirID, n) }

// RootPlace is the root directory's place.
func (v *Vault) RootPlace() Place { return v.tree.RootPlace() }

// ReadDirID reads the ID of directory fd found at place p (with location
// binding it must be bound there: bind.ErrMisplaced otherwise; without
// binding p is not looked at).
func (v *Vault) ReadDirID(fd int, p Place) ([]byte, error) {
	id, err := v.tree.DirIDs().Read(fd, p)
	if err == nil {
		v.learnAt(id, p)
	}
	return id, err
}

// MayBeAlias reports whether plain may be shown for an alias (a conflict
// copy's name, or with showBad an undecryptable entry's), so that a name
// whose own backing entry is absent is worth looking up as one.
func MayBeAlias(plain string, showBad bool) bool { return tree.MayBeAlias(plain, showBad) }

// BadName is the name an undecryptable backing entry b is listed under
// (b + session.BadNameSuffix); ok is false if that name would be too long.
func BadName(b string) (Name, bool) { return tree.BadName(b) }

// IsShadowed reports whether err marks a conflict copy hidden by another
// entry of its displayed name (never listed).
func IsShadowed(err error) bool { return errors.Is(err, tree.ErrShadowed) }

// ProbeXattrs reports (an error of which IsNoXattrs is true) when the
// backing store of root fd keeps no extended attributes.
func ProbeXattrs(rootfd int) error { return tree.ProbeXattrs(rootfd) }

// IsNoXattrs reports whether err says the backing store keeps no extended
// attributes.
func IsNoXattrs(err error) bool { return errors.Is(err, tree.ErrNoXattrs) }

// ResolveAlias finds the alias shown as plain (a conflict copy, or with
// showBad an undecryptable entry) whose own encrypted name is absent.
func (d *Dir) ResolveAlias(plain string, showBad bool) (Name, unix.Stat_t, error) {
	return d.v.tree.ResolveAlias(d.treeDir(), plain, showBad)
}

// Rmdir removes the empty directory n: its ID file, the directory, its
// long-name sidecar (tree's ErrNotEmpty if anything else is in it).
func (d *Dir) Rmdir(n Name) error {
	err := d.v.tree.Rmdir(d.treeDir(), n)
	if err == nil {
		d.v.changes.removed(d.id, n.Backing)
	}
	return err
}

// Mknod creates a FIFO, socket, device node or empty regular file n.
func (d *Dir) Mknod(n Name, mode uint32, dev uint64) error {
	err := d.v.tree.Mknod(d.treeDir(), n, mode, dev)
	if err == nil {
		d.v.changes.made(d.id, n.Backing)
	}
	return err
}

// LinkSize is symlink n's plaintext target length, computed from the
// backing sizes in st without reading the link (a read would move its
// atime).
func (d *Dir) LinkSize(n Name, st *unix.Stat_t) (int64, error) {
	return d.v.tree.Symlinks().Size(d.treeDir(), n, st)
}

// ObjectAt is the attributes of the object open as fd with ID id (nil:
// it has none), for a door that holds the fd itself.
func (v *Vault) ObjectAt(fd int, id []byte) Object { return Object{v: v, fd: fd, id: id} }
