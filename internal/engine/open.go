package engine

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// File is an open backing inode: one per inode in the vault's open-file
// table, shared by every handle of every door and by every hard link until
// the last reference is released (Release). So an open-but-unlinked file
// keeps working, and the content engine's size and tail caches are never
// duplicated (two engine files on one inode would disagree).
type File struct {
	v    *Vault
	key  FileKey
	fd   int
	file *fileengine.File

	// Mode is the backing st_mode as the mount last saw it, for clearing
	// set-user-ID and set-group-ID on a write.
	Mode atomic.Uint32
	// AppendMu makes the size lookup and the write of an O_APPEND write
	// one step.
	AppendMu sync.Mutex
	// Wrote: written through since it was opened (the mount's page-cache
	// rule).
	Wrote atomic.Bool
	// places are its names, for the changes told (changes.go); unused
	// without Changes.
	places filePlaces
}

// OpenOptions say how a door opens a regular file.
type OpenOptions struct {
	// Want, if its Ino is set, is the inode the door expects at the name
	// (the mount's node): another one there is errGone. A zero Dev
	// matches any device.
	Want FileKey
	// ReadWrite: an entry that cannot be opened read-write is not opened
	// read-only instead.
	ReadWrite bool
	// ForWrite: the caller will write (the vault package's rule). It
	// cannot share a file open on a read-only backing file (fileengine.ErrBusy:
	// it would have to reopen it under the readers), and implies
	// ReadWrite. The mount does not refuse such writers (their writes
	// fail instead).
	ForWrite bool
	// NoAtime opens the backing file with O_NOATIME where allowed: the
	// engine's reads (header, read-modify-write of partial chunks) then
	// do not move the plaintext atime, which is the backing atime (the
	// mount's rule: atime changes only by utimensat).
	NoAtime bool
}

// maxOpenTries bounds how often Open tries again a file found at a name
// it is not bound to (the renamed-away-and-back race, see Open).
const maxOpenTries = 4

// Open opens regular file n of d at its place: the one place-checked open
// of the vault. The file is taken from the open-file table if its inode is
// open already (by any door), else its backing file is opened read-write
// (the engine reads back partial chunks, and a later writer can share it)
// or, failing that for a reader, read-only; with location binding its
// header must bind it to (d's ID, n) (fileengine.Table.AcquireAt).
//
// The rename race: with location binding a rename drops the old name's
// binding once it is done, so an open that found the name just before a
// rename moved the file away finds the file bound elsewhere
// (bind.ErrMisplaced). If the name no longer holds that inode (by device and
// inode number), the rename won and the open fails with errGone, as open(2)
// does for a name removed during the call. If it does (renamed away and
// back: the binding is back too) the open is tried again, a few times;
// only a file found at a name it is not bound to that often is misplaced.
//
// Errors of the backing open pass through: a symlink (ELOOP), directory
// (EISDIR) or special file (backing.ErrNotRegular) at the name is the
// door's to report.
func (d *Dir) Open(n Name, o OpenOptions) (*File, error) {
	for try := 1; ; try++ {
		f, key, err := d.openOnce(n, o)
		if !errors.Is(err, bind.ErrMisplaced) || key.Ino == 0 {
			return f, err
		}
		st, serr := backing.Fstatat(d.fd, n.Backing)
		if serr != nil || !sameInode(key, st) {
			return nil, errGone
		}
		if try >= maxOpenTries {
			return nil, err
		}
		o.Want = key
	}
}

// openOnce is one try of Open; key is the inode opened (zero if none).
func (d *Dir) openOnce(n Name, o OpenOptions) (*File, FileKey, error) {
	fd, err := openBacking(d.fd, n.Backing, unix.O_RDWR, o.NoAtime)
	writable := err == nil
	if !o.ForWrite && !o.ReadWrite && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EROFS)) {
		fd, err = openBacking(d.fd, n.Backing, unix.O_RDONLY, o.NoAtime)
	}
	if err != nil {
		return nil, FileKey{}, err
	}
	return d.v.adopt(fd, d.Place(n), d.link(n), writable, o)
}

// sameInode reports whether st is the inode key.
func sameInode(key FileKey, st unix.Stat_t) bool {
	return st.Ino == key.Ino && (key.Dev == 0 || uint64(st.Dev) == key.Dev)
}

// openBacking opens a regular backing file, with O_NOATIME if noAtime
// and allowed (O_NOATIME needs the file's owner or CAP_FOWNER).
// backing.OpenRegular refuses a non-regular entry without blocking on it
// (a FIFO planted in CIPHERDIR).
func openBacking(dirfd int, name string, flags int, noAtime bool) (int, error) {
	if noAtime {
		fd, _, err := backing.OpenRegular(dirfd, name, flags|unix.O_NOATIME)
		if !errors.Is(err, unix.EPERM) {
			return fd, err
		}
	}
	fd, _, err := backing.OpenRegular(dirfd, name, flags)
	return fd, err
}

// adopt puts a freshly opened backing fd into the table at place p (the
// name at, for the changes told), or, if its inode is open already, closes fd and shares that
// file (whose header must then bind it to p as well). It owns fd. writable
// says whether fd is read-write. The key it returns is fd's inode, also on
// a failure of the table.
func (v *Vault) adopt(fd int, p Place, at dirLink, writable bool, o OpenOptions) (*File, FileKey, error) {
	st, err := backing.Fstat(fd)
	if err != nil {
		backing.Close(fd)
		return nil, FileKey{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || (o.Want.Ino != 0 && !sameInode(o.Want, st)) {
		backing.Close(fd)
		switch {
		case o.Want.Ino != 0:
			return nil, FileKey{}, errGone
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			return nil, FileKey{}, errIsDir
		}
		return nil, FileKey{}, errNotRegular
	}
	key := FileKey{Dev: uint64(st.Dev), Ino: st.Ino}
	f, err := v.files.AcquireAt(key, v.tree.NewFile(fd, &st), p, writable, o.ForWrite, func(cf *fileengine.File) *File {
		f := &File{v: v, key: key, fd: fd, file: cf}
		f.Mode.Store(st.Mode)
		if v.changes != nil {
			cf.SetOnHeader(f.headerWritten)
		}
		return f
	})
	if err == nil && v.changes != nil {
		f.places.add(at)
	}
	return f, key, err
}

// openAt is the open file at backing name b of dirfd, with a reference,
// or nil (none open, or no Changes to tell). With no file open it costs
// no syscall (an rm -rf).
func (v *Vault) openAt(dirfd int, b string) *File {
	if v.changes == nil || v.files.Len() == 0 {
		return nil
	}
	st, err := backing.Fstatat(dirfd, b)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	f, _ := v.files.Lookup(FileKey{Dev: uint64(st.Dev), Ino: st.Ino})
	return f
}

// renamed tells a rename done of n in d to tn in to, and moves the places
// of an open file it moved (and drops tn from those of an open file it
// replaced).
func (v *Vault) renamed(d *Dir, n Name, to *Dir, tn Name, exchange bool, replaced *File) {
	from, dst := d.link(n), to.link(tn)
	moved := v.openAt(to.fd, tn.Backing)
	if replaced != nil && replaced != moved {
		replaced.places.move(dst, dirLink{})
	}
	if f := moved; f != nil {
		f.places.move(from, dst)
		f.Release()
	}
	if exchange {
		if f := v.openAt(d.fd, n.Backing); f != nil {
			f.places.move(dst, from)
			f.Release()
		}
	}
	v.changes.renamed(d.id, n.Backing, to.id, tn.Backing, exchange)
}

// rebindSource is the tree's FileSource with location binding
// (tree.SetFiles): a file renamed, linked or unlinked is rebound through
// its one engine file in the table, so that an open file's cached header
// stays the one on disk.
func (v *Vault) rebindSource(dirfd int, backingName string, p Place) (*fileengine.File, func() error, error) {
	fd, err := openBacking(dirfd, backingName, unix.O_RDWR, true)
	if err != nil {
		return nil, nil, err
	}
	f, _, err := v.adopt(fd, p, dirLink{string(p.ParentID), backingName}, true, OpenOptions{})
	if err != nil {
		return nil, nil, err
	}
	return f.file, f.Release, nil
}

// Lookup returns the open file of inode key with a new reference, if it
// is open.
func (v *Vault) Lookup(key FileKey) (*File, bool) { return v.files.Lookup(key) }

// LookupOwned is Lookup for a file bound to owner (Bind): an open inode
// bound to anything else is not returned.
func (v *Vault) LookupOwned(key FileKey, owner any) (*File, bool) {
	return v.files.LookupOwned(key, owner)
}

// errIsDir, errNotRegular: what Open found at a name where no inode was
// expected (Want unset) is no regular file.
var (
	errIsDir      = tree.ErrIsDir
	errNotRegular = tree.ErrInvalid
)
