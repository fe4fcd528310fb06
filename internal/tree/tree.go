// Package tree maps a plaintext directory tree onto the backing directory
// tree of a vault: directory IDs, encrypted and long names with their
// sidecars, symlink targets and extended attributes, all through directory
// file descriptors (internal/backing). File contents go through core.
//
// The FUSE layer, the offline tools and fsck all use it, so that the rules of
// docs/format.md ("Names", "Symlinks", "xattrs", "Directory IDs") are written
// down in one place. Kernel errors come back as unix.Errno (wrapped or not),
// format violations as the sentinel errors of this package and of the
// crypto packages. Where tree itself enforces a rule the kernel cannot see
// in the backing store (rmdir of a directory holding only its dirid,
// rename over a directory, hard links of symlinks), it returns one of the
// sentinels of errors.go; internal/fault classifies them and the FUSE layer
// turns them into the errno rename(2), rmdir(2) or link(2) would give.
package tree

import (
	cryptorand "crypto/rand"
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// Errors of the tree layer. The FUSE layer maps both to EIO.
var (
	// ErrCorruptDir: a directory's encryptfs.dirid is missing or malformed.
	ErrCorruptDir = errors.New("tree: directory ID file missing or corrupt")
	// ErrReverse: the vault is a reverse-mode vault; forward mode refuses
	// it (internal/session checks, as session.ErrReverse).
	ErrReverse = errors.New("tree: vault is a reverse-mode vault")
)

// Tree holds the vault's name, symlink and xattr ciphers. It is safe for
// concurrent use and keeps no file descriptors: every method takes the
// directory fd to act in. The keys it is built from belong to the caller
// (internal/session), which wipes them.
type Tree struct {
	names  *names.Cipher
	links  *meta.Symlinks
	xattrs *meta.Xattrs
	rand   io.Reader
	// fs makes every change to the backing store (nil: unobserved).
	fs *backing.FS
	// bind is nil in v1; with location binding (bound.go) it holds the
	// binder and the vault ID, and files opens files to rebind them.
	bind  *Binding
	files FileSource
	ep    dirEpochs // master-key epochs (epoch.go)
}

// New builds the name, symlink and xattr ciphers from the vault's derived
// subkeys k. rand (nil: crypto/rand) supplies directory IDs and the nonces
// of symlinks and xattr values. fsys makes every change the tree makes to
// the backing store; nil makes them unobserved (see backing.FS).
func New(k *keys.Keys, rand io.Reader, fsys *backing.FS) (*Tree, error) {
	t := &Tree{rand: rand, fs: fsys}
	if t.rand == nil {
		t.rand = cryptorand.Reader
	}
	var err error
	if t.names, err = names.New(k.Names); err != nil {
		return nil, fmt.Errorf("tree: names: %w", err)
	}
	if t.links, err = meta.NewSymlinks(k.Symlinks); err != nil {
		return nil, fmt.Errorf("tree: symlinks: %w", err)
	}
	if t.xattrs, err = meta.NewXattrs(k.XattrNames, k.XattrValues); err != nil {
		return nil, fmt.Errorf("tree: xattrs: %w", err)
	}
	return t, nil
}

// NewDirID returns a fresh random directory ID.
func (t *Tree) NewDirID() ([]byte, error) {
	id := make([]byte, names.DirIDSize)
	if _, err := io.ReadFull(t.rand, id); err != nil {
		return nil, fmt.Errorf("tree: random dirID: %w", err)
	}
	return id, nil
}

// ReadDirID reads the ID of the open backing directory dirfd. A missing,
// oversized or non-regular encryptfs.dirid (a FIFO planted there must not
// hang the caller: backing.ReadFileAt opens it non-blocking and checks its
// type; a symlink is refused by O_NOFOLLOW with ELOOP) is ErrCorruptDir.
func (t *Tree) ReadDirID(dirfd int) ([]byte, error) {
	if t.bind != nil {
		return nil, errNoPlace
	}
	return t.DirIDOf(ReadDirIDFile(dirfd), bind.Place{})
}

// writeDirID stores the ID file of directory dirfd, whose ID is id and
// whose place is p (with binding: see bound.go): written as 0600,
// fsynced, then made 0400.
func (t *Tree) writeDirID(dirfd int, id []byte, p bind.Place) error {
	t.noteEpoch(id, t.ep.current) // a new directory: the current epoch
	return t.fs.WriteFileAt(dirfd, names.DirIDFile, t.dirIDFile(id, t.ep.current, p, nil), 0o400)
}

// InitRoot gives a new vault's root directory (rootfd) its ID. It fails with
// EEXIST if the root already has one.
func (t *Tree) InitRoot(rootfd int) ([]byte, error) {
	id, err := t.NewDirID()
	if err != nil {
		return nil, err
	}
	if err := t.writeDirID(rootfd, id, t.RootPlace()); err != nil {
		return nil, fmt.Errorf("tree: write root %s: %w", names.DirIDFile, err)
	}
	if err := t.fs.Fsync(rootfd); err != nil {
		return nil, err
	}
	return id, nil
}

// NewFile wraps the fd of a file's contents, opened by a door, for the
// engine: when the vault's changes are observed (freshness, crash replay)
// its writes, truncates and fsyncs are reported like every change the
// tree makes, so that contents changed through the mount are recorded as
// those changed through the vault package are; unobserved, it is the
// plain backing.File (nothing added to the write path). st, if not nil,
// is fd's current stat (backing.NewFile).
func (t *Tree) NewFile(fd int, st *unix.Stat_t) core.OwnedBacking {
	if t.fs.Observed() {
		return t.fs.NewFile(fd, st)
	}
	return backing.NewFile(fd, st)
}
