// Package engine is the per-vault engine every door goes through: the
// session builds one at unlock from its name tree, content engine and
// backing FS, and owns it. A door reaches the vault's directories through
// a Dir handle and its regular files through File handles; the engine
// owns the rules that must exist once per vault:
//
//   - one open-file table (fileengine.Table): at most one engine file per
//     backing inode, shared by every door and by the tree's rebinding of
//     headers (tree.SetFiles);
//   - one place-checked open of a file at its place, with the race
//     against a rename handled (Dir.Open);
//   - the directory operations the doors need (lookup, list, create,
//     mkdir, unlink, rename, link, symlink, readlink, xattrs, attributes),
//     implemented on the tree, the content engine and the backing store,
//     so that the door does not call them.
//
// It turns no error into an errno (it sits below the FUSE layer): the
// doors map its errors through internal/fault.
package engine

import (
	"errors"
	"io/fs"
	"sync"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// DirPlace computes a directory's place when a lookup needs it (nil: the
// directory has none, and no conflict copy of its ID file is valid).
type DirPlace = tree.DirPlace

// Name is a directory entry's name: its plaintext and backing forms, and
// whether it is an alias (a sync tool's conflict copy or an undecryptable
// entry, which is read-only: Name.ReadOnly).
type Name = tree.Name

// Place is where an entry is bound with location binding: its parent's
// directory ID and its encrypted name.
type Place = fileengine.Place

// FileKey identifies a backing inode: device and inode number. It keys the
// open-file table.
type FileKey = fileengine.FileKey

// errGone: the entry a door looked up is no longer at its name (a rename
// or unlink won the race with an open). ENOENT at the doors, as open(2)
// gives for a name removed during the call. The engine's other errors are
// those of the layers below (fileengine.ErrClosed after Close, fileengine.ErrBusy,
// bind.ErrMisplaced...), which internal/fault classifies.
var errGone = fault.New(fault.NotFound, "engine: the entry left its name while it was opened")

// Vault is the engine of one unlocked vault. Its methods are safe for
// concurrent use.
type Vault struct {
	dir   string
	tree  *tree.Tree
	core  *fileengine.Engine
	fs    *backing.FS
	files *fileengine.Table[*File]
	// changes is told what each operation changed (SetChanges); nil
	// without freshness.
	changes *changes

	mu     sync.Mutex
	rootfd int // CIPHERDIR, opened on first use; -1 before
	closed bool
	onLast func(*File)
}

// New builds the engine of the vault in dir from the session's parts. It
// reads nothing from dir (the root is opened on first use). With location
// binding, the tree rebinds the headers of files through the engine's
// open-file table from now on (tree.SetFiles), so that a file open in any
// door keeps the header on disk in its cache.
func New(dir string, t *tree.Tree, e *fileengine.Engine, fs *backing.FS) *Vault {
	v := &Vault{dir: dir, tree: t, core: e, fs: fs, rootfd: -1}
	v.files = fileengine.NewTable[*File](e)
	v.files.OnLast = v.lastReleased
	if t.Bound() {
		t.SetFiles(v.rebindSource)
	}
	return v
}

// Bound reports whether the vault binds locations (format v2).
func (v *Vault) Bound() bool { return v.tree.Bound() }

// Roots reports whether the vault's files carry file roots (format v2):
// the vault's answer, not a file's, which a concurrent rebind may be
// writing.
func (v *Vault) Roots() bool { return v.core.Roots() }

// MaxPlainSize is the largest plaintext file the vault holds.
func (v *Vault) MaxPlainSize() int64 { return v.core.Suite().MaxPlainSize() }

// ChunkSize is the vault's plaintext chunk size.
func (v *Vault) ChunkSize() int { return v.core.Suite().ChunkSize() }

// CipherSize is the backing size of a plaintext size: where its last
// chunk ends.
func (v *Vault) CipherSize(plain int64) int64 { return v.core.Suite().CipherSize(plain) }

// PlainSize is the plaintext size of a backing file of size cipher.
func (v *Vault) PlainSize(cipher int64) (int64, error) { return v.core.Suite().PlainSize(cipher) }

// OnLastRelease sets fn to be called when the last reference to an open
// file is released, before it closes, with the table's lock held (so it
// is ordered before any later open of the inode); fn must not call the
// engine. The mount remembers there what was written (its page-cache
// rule). Set it before the vault is used.
func (v *Vault) OnLastRelease(fn func(*File)) { v.onLast = fn }

func (v *Vault) lastReleased(_ FileKey, f *File) {
	if v.onLast != nil {
		v.onLast(f)
	}
}

// root returns CIPHERDIR's fd, opening it on first use.
func (v *Vault) root() (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return -1, fileengine.ErrClosed
	}
	if v.rootfd < 0 {
		fd, err := backing.OpenRoot(v.dir)
		if err != nil {
			return -1, err
		}
		v.rootfd = fd
	}
	return v.rootfd, nil
}

// OpenRoot opens CIPHERDIR now rather than on first use, so that a door
// that cannot reach it fails at once.
func (v *Vault) OpenRoot() error {
	_, err := v.root()
	return err
}

// StatRoot is CIPHERDIR's own stat (its ID is not read).
func (v *Vault) StatRoot() (unix.Stat_t, error) {
	fd, err := v.root()
	if err != nil {
		return unix.Stat_t{}, err
	}
	return backing.Fstat(fd)
}

// FileMode converts a backing st_mode to an fs.FileMode (type,
// permission, setuid, setgid and sticky bits).
func FileMode(mode uint32) fs.FileMode { return backing.FileMode(mode) }

// OpenFiles returns the number of open backing inodes.
func (v *Vault) OpenFiles() int { return v.files.Len() }

// CloseFiles closes every open file, whatever its references, and makes
// later opens fail with ErrClosed: for a door's shutdown (an unmount can
// overtake the last RELEASEs), when no handle will be used again.
func (v *Vault) CloseFiles() error { return v.files.Close() }

// Close closes the open files and the root. The session calls it; Close
// is idempotent.
func (v *Vault) Close() error {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	err := v.files.Close()
	if v.rootfd >= 0 {
		err = errors.Join(err, backing.Close(v.rootfd))
		v.rootfd = -1
	}
	return err
}

// IsNotRegular reports whether err is an open refused because the entry
// is no regular file (a FIFO, device or socket planted at the name:
// backing.ErrNotRegular).
func IsNotRegular(err error) bool { return errors.Is(err, backing.ErrNotRegular) }

// IsMisplaced reports whether err is a file or directory found where it is
// not bound (format v2 location binding: moved, copied or grafted there).
func IsMisplaced(err error) bool { return errors.Is(err, bind.ErrMisplaced) }

// IsBadRoot reports whether err is a file-root mismatch (format v2 file
// roots): what a power loss leaves in a file changed since its last fsync,
// as well as what tampering leaves.
func IsBadRoot(err error) bool { return errors.Is(err, content.ErrBadRoot) }

// MaxXattrName is the longest user.* attribute name whose encrypted
// backing name fits the 255-byte limit.
const MaxXattrName = meta.MaxXattrName
