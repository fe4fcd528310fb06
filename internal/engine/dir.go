package engine

import (
	"errors"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// Entry is a listed directory entry whose name decrypted; BadEntry one
// whose name did not (a foreign file, a tampered name).
type (
	Entry    = tree.Entry
	BadEntry = tree.BadEntry
)

// Dir is an open directory of the vault: its backing fd, its directory ID
// and its place (where it is bound, with location binding). It is the
// handle a door does everything in a directory through. A Dir from Root
// or Sub is the caller's to Close.
type Dir struct {
	v     *Vault
	fd    int
	id    []byte
	place func() (Place, error)
	owned bool // fd is closed by Close
}

// Root opens the vault's root directory, reading (and, with location
// binding, checking) its ID.
func (v *Vault) Root() (*Dir, error) {
	fd, err := v.root()
	if err != nil {
		return nil, err
	}
	id, err := v.tree.DirIDs().ReadRoot(fd)
	if err != nil {
		return nil, err
	}
	rp := v.tree.RootPlace()
	v.learnAt(id, rp)
	return &Dir{v: v, fd: fd, id: id, place: func() (Place, error) { return rp, nil }}, nil
}

// DirAt is a Dir over a directory fd the door keeps open itself (the
// mount caches them in its nodes): fd stays the caller's (Close leaves
// it), id is its directory ID and place computes its place when a
// lookup needs it (nil: it has none, as a directory found by backing
// name has not).
func (v *Vault) DirAt(fd int, id []byte, place func() (Place, error)) *Dir {
	return &Dir{v: v, fd: fd, id: id, place: place}
}

// Close closes the directory's fd if the Dir owns it. Idempotent.
func (d *Dir) Close() error {
	if !d.owned || d.fd < 0 {
		return nil
	}
	fd := d.fd
	d.fd = -1
	return backing.Close(fd)
}

// ID is the directory's ID.
func (d *Dir) ID() []byte { return d.id }

// Place is where entry n of d is bound (its file's header or directory's
// ID file must name it, with location binding).
func (d *Dir) Place(n Name) Place { return d.v.tree.Place(d.id, n) }

// treeDir is d as the tree takes it; its place is nil if d has none (then
// the tree takes no conflict copy of its ID file as valid).
func (d *Dir) treeDir() tree.Dir { return tree.NewDir(d.fd, d.id, d.place) }

// Lookup finds the entry shown as plain, as every door does
// (tree.Resolve): its own encrypted name, else a sync tool's conflict copy,
// else (showBad) an undecryptable entry. It returns the entry's backing
// stat too.
func (d *Dir) Lookup(plain string, showBad bool) (Name, unix.Stat_t, error) {
	return d.v.tree.Resolve(d.treeDir(), plain, showBad)
}

// NewName is the name a new entry plain gets in d (its encryption, no
// lookup).
func (d *Dir) NewName(plain string) (Name, error) { return d.v.tree.Name(d.id, plain) }

// Resolve is Lookup (without undecryptable entries) or, when no entry is
// shown as plain, the name a new entry gets (NewName).
func (d *Dir) Resolve(plain string) (Name, error) {
	n, _, err := d.Lookup(plain, false)
	if errors.Is(err, tree.ErrNotFound) {
		n, err = d.NewName(plain)
	}
	return n, err
}

// DecryptName decrypts backing name b of d (reading its sidecar if it is
// a long name).
func (d *Dir) DecryptName(b string) (Name, error) {
	return d.v.tree.DecryptName(d.treeDir(), b)
}

// Sub opens subdirectory n of d, reading (and checking the binding of) its
// ID. Symlinks are never followed (the backing open refuses them).
func (d *Dir) Sub(n Name) (*Dir, error) {
	sub, err := backing.OpenSubdir(d.fd, n.Backing)
	if err != nil {
		return nil, err
	}
	p := d.Place(n)
	id, err := d.v.tree.DirIDs().Read(sub, p)
	if err != nil {
		backing.Close(sub)
		return nil, err
	}
	d.v.changes.learn(id, d.id, n.Backing)
	return &Dir{v: d.v, fd: sub, id: id, owned: true, place: func() (Place, error) { return p, nil }}, nil
}

// List lists d: the entries whose names decrypt, and those whose names do
// not.
func (d *Dir) List() ([]Entry, []BadEntry, error) {
	return d.v.tree.List(d.treeDir())
}

// Stat is d's own backing stat.
func (d *Dir) Stat() (unix.Stat_t, error) { return backing.Fstat(d.fd) }

// Lstat is the backing stat of entry n (a symlink is not followed; Size
// is the backing size).
func (d *Dir) Lstat(n Name) (unix.Stat_t, error) { return backing.Fstatat(d.fd, n.Backing) }

// Attr is an entry's backing stat with its plaintext size.
type Attr struct {
	unix.Stat_t
	Size int64 // plaintext: a file's contents, a symlink's target
}

// Attr describes entry n: its backing stat and plaintext size, that of a
// regular file from its open file if it has one (authoritative while
// open), else from the backing size; a symlink's from its decrypted
// target.
func (d *Dir) Attr(n Name) (Attr, error) {
	st, err := d.Lstat(n)
	if err != nil {
		return Attr{}, err
	}
	a := Attr{Stat_t: st, Size: st.Size}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		a.Size, err = d.v.plainSize(st)
	case unix.S_IFLNK:
		var target string
		target, err = d.Readlink(n)
		a.Size = int64(len(target))
	}
	return a, err
}

// plainSize is a regular file's plaintext size: from its open file if
// there is one, else from the backing size.
func (v *Vault) plainSize(st unix.Stat_t) (int64, error) {
	key := FileKey{Dev: uint64(st.Dev), Ino: st.Ino}
	if f, ok := v.Lookup(key); ok {
		size, err := f.Size()
		f.Release()
		if !errors.Is(err, fileengine.ErrClosed) {
			return size, err
		}
	}
	return v.PlainSize(st.Size)
}

// Sync makes d's entries durable (fsync of its backing directory).
func (d *Dir) Sync() error { return d.v.fs.Fsync(d.fd) }

// Create creates regular file n in d exclusively (tree.Create: flags may
// add extras such as O_NOATIME) with mode and opens it as Open does
// (ForWrite of o counts; the new file is read-write). An existing name is
// EEXIST. If the new file cannot be put into the open-file table, it is
// removed again: the caller is told it was not created.
func (d *Dir) Create(n Name, flags int, mode uint32, o OpenOptions) (*File, error) {
	fd, err := d.v.tree.Create(d.treeDir(), n, flags, mode)
	if err != nil {
		return nil, err
	}
	o.Want = FileKey{}
	f, _, err := d.v.adopt(fd, d.Place(n), d.link(n), true, o)
	if err != nil {
		d.v.tree.Unlink(d.treeDir(), n, 0)
		return nil, err
	}
	d.v.changes.created(d.id, n.Backing, f)
	return f, nil
}

// Mkdir creates directory n in d with mode (permission bits, setgid,
// sticky) and a new directory ID bound to its place, and returns the ID.
func (d *Dir) Mkdir(n Name, mode uint32) ([]byte, error) {
	id, err := d.v.tree.Mkdir(d.treeDir(), n, mode)
	if err == nil {
		d.v.changes.madeDir(d.id, n.Backing, id)
	}
	return id, err
}

// Remove removes entry n: an empty directory (Rmdir) or any other entry
// (Unlink).
func (d *Dir) Remove(n Name) error {
	st, err := d.Lstat(n)
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return d.Rmdir(n)
	}
	return d.Unlink(n, 0)
}

// Unlink removes non-directory n of type mode (an S_IFMT value; 0: any);
// with location binding, a file's binding to this name is dropped once
// the unlink is durable.
func (d *Dir) Unlink(n Name, mode uint32) error {
	return d.unlink(n, func() error { return d.v.tree.Unlink(d.treeDir(), n, mode) })
}

// UnlinkSole is Unlink of regular file n that the caller knows to have no
// other name: a link count of 1 it saw, in a CIPHERDIR that no one else
// changes (see tree.UnlinkSole: with location binding it saves a stat).
func (d *Dir) UnlinkSole(n Name) error {
	return d.unlink(n, func() error { return d.v.tree.UnlinkSole(d.treeDir(), n) })
}

// unlink is Unlink and UnlinkSole around rm, the tree's unlink of n.
func (d *Dir) unlink(n Name, rm func() error) error {
	f := d.v.openAt(d.fd, n.Backing)
	err := rm()
	if err == nil {
		if f != nil {
			f.places.move(d.link(n), dirLink{})
		}
		d.v.changes.removed(d.id, n.Backing)
	}
	if f != nil {
		f.Release()
	}
	return err
}

// Rename moves n of d to tn of to, with rename(2) semantics and flags
// (RENAME_NOREPLACE, RENAME_EXCHANGE); with location binding the one
// object moved is rebound.
func (d *Dir) Rename(n Name, to *Dir, tn Name, flags uint) error {
	exchange := flags&unix.RENAME_EXCHANGE != 0
	var replaced *File // an open file the rename may replace at tn
	if !exchange {
		replaced = d.v.openAt(to.fd, tn.Backing)
	}
	err := d.v.tree.Rename(d.treeDir(), n, to.treeDir(), tn, flags)
	if err == nil && d.v.changes != nil {
		d.v.renamed(d, n, to, tn, exchange, replaced)
	}
	if replaced != nil {
		replaced.Release()
	}
	return err
}

// Link makes tn in to a hard link to n of d (with location binding, bound
// to its new name first).
func (d *Dir) Link(n Name, to *Dir, tn Name) error {
	err := d.v.tree.Link(d.treeDir(), n, to.treeDir(), tn)
	if err == nil && d.v.changes != nil {
		if f := d.v.openAt(to.fd, tn.Backing); f != nil {
			f.places.add(to.link(tn))
			f.Release()
		}
		d.v.changes.touched(d.id, n.Backing)
		d.v.changes.made(to.id, tn.Backing)
	}
	return err
}

// Symlink creates n in d as a symlink to target, stored encrypted and
// bound to (d, n).
func (d *Dir) Symlink(n Name, target string) error {
	err := d.v.tree.Symlink(d.treeDir(), n, target)
	if err == nil {
		d.v.changes.made(d.id, n.Backing)
	}
	return err
}

// Readlink decrypts the target of symlink n.
func (d *Dir) Readlink(n Name) (string, error) {
	return d.v.tree.Symlinks().Readlink(d.treeDir(), n)
}

// Chmod sets entry n's mode bits (not following a symlink).
func (d *Dir) Chmod(n Name, mode uint32) error { return backing.Fchmodat(d.fd, n.Backing, mode) }

// Chown sets entry n's owner and group (-1 keeps one; not following a
// symlink).
func (d *Dir) Chown(n Name, uid, gid int) error { return backing.Fchownat(d.fd, n.Backing, uid, gid) }

// Utimens sets entry n's access and modification times (UTIME_OMIT keeps
// one; not following a symlink).
func (d *Dir) Utimens(n Name, ts [2]unix.Timespec) error {
	return backing.UtimesNanoAt(d.fd, n.Backing, ts)
}
