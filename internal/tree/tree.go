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
// rename over a directory, hard links of symlinks), it returns the errno
// rename(2), rmdir(2) or link(2) would, so that callers need no mapping.
package tree

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// Errors of the tree layer. The FUSE layer maps both to EIO.
var (
	// ErrCorruptDir: a directory's encryptfs.dirid is missing or malformed.
	ErrCorruptDir = errors.New("tree: directory ID file missing or corrupt")
	// ErrReverse: the vault is a reverse-mode vault; forward mode refuses it.
	ErrReverse = errors.New("tree: vault is a reverse-mode vault")
)

// Tree holds the vault's keys and ciphers. It is safe for concurrent use and
// keeps no file descriptors: every method takes the directory fd to act in.
type Tree struct {
	keys   *keys.Keys
	engine *core.Engine
	names  *names.Cipher
	links  *meta.Symlinks
	xattrs *meta.Xattrs
	rand   io.Reader
}

// New derives the subkeys from masterKey and builds every cipher of the
// vault described by p. opts.Rand (nil: crypto/rand) also supplies directory
// IDs and the nonces of symlinks and xattr values.
func New(p config.Params, masterKey []byte, opts core.Options) (*Tree, error) {
	if p.Reverse {
		return nil, ErrReverse
	}
	k, err := keys.Derive(masterKey)
	if err != nil {
		return nil, err
	}
	t := &Tree{keys: k, rand: opts.Rand}
	if t.rand == nil {
		t.rand = rand.Reader
	}
	suite, err := content.NewSuite(content.Algorithm(p.Cipher), p.ChunkSize, k.Contents, k.HeaderMAC)
	if err != nil {
		k.Wipe()
		return nil, fmt.Errorf("tree: content suite: %w", err)
	}
	t.engine = core.NewEngine(suite, opts)
	if t.names, err = names.New(k.Names); err != nil {
		k.Wipe()
		return nil, fmt.Errorf("tree: names: %w", err)
	}
	if t.links, err = meta.NewSymlinks(k.Symlinks); err != nil {
		k.Wipe()
		return nil, fmt.Errorf("tree: symlinks: %w", err)
	}
	if t.xattrs, err = meta.NewXattrs(k.XattrNames, k.XattrValues); err != nil {
		k.Wipe()
		return nil, fmt.Errorf("tree: xattrs: %w", err)
	}
	return t, nil
}

// Engine returns the content engine: open regular files with
// Engine().Open on a backing fd.
func (t *Tree) Engine() *core.Engine { return t.engine }

// Wipe overwrites the tree's copies of the subkeys and the content suite's
// copies of its keys. The ciphers built from them keep their own key
// schedules until garbage collected; Wipe is a best effort at unmount time,
// not a guarantee.
func (t *Tree) Wipe() { t.keys.Wipe(); t.engine.Suite().Wipe() }

// NewDirID returns a fresh random directory ID.
func (t *Tree) NewDirID() ([]byte, error) {
	id := make([]byte, names.DirIDSize)
	if _, err := io.ReadFull(t.rand, id); err != nil {
		return nil, fmt.Errorf("tree: random dirID: %w", err)
	}
	return id, nil
}

// ReadDirID reads the ID of the open backing directory dirfd.
func (t *Tree) ReadDirID(dirfd int) ([]byte, error) {
	id, err := backing.ReadFileAt(dirfd, names.DirIDFile, names.DirIDSize)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, backing.ErrTooBig) {
		return nil, fmt.Errorf("%w: %v", ErrCorruptDir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("tree: read %s: %w", names.DirIDFile, err)
	}
	if len(id) != names.DirIDSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorruptDir, len(id))
	}
	return id, nil
}

// writeDirID stores id in dirfd: written as 0600, fsynced, then made 0400.
func writeDirID(dirfd int, id []byte) error {
	return backing.WriteFileAt(dirfd, names.DirIDFile, id, 0o400)
}

// InitRoot gives a new vault's root directory (rootfd) its ID. It fails with
// EEXIST if the root already has one.
func (t *Tree) InitRoot(rootfd int) ([]byte, error) {
	id, err := t.NewDirID()
	if err != nil {
		return nil, err
	}
	if err := writeDirID(rootfd, id); err != nil {
		return nil, fmt.Errorf("tree: write root %s: %w", names.DirIDFile, err)
	}
	if err := backing.Fsync(rootfd); err != nil {
		return nil, err
	}
	return id, nil
}
