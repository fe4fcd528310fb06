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
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/fileengine"
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

// Tree holds the vault's name cipher and the parts that own the other
// rules of the backing tree: directory ID files (DirIDs), master-key
// epochs (Epochs), symlink targets (Symlinks), extended attributes
// (Xattrs) and the rebinding of renamed and linked objects (rebinder).
// Tree itself owns the entries of a directory: their names and sidecars,
// lookup (resolve.go) and the operations that make, remove and move them.
// It is safe for concurrent use and keeps no file descriptors: every
// method takes the directory (a Dir) or the fd to act in. The keys it is
// built from belong to the caller (internal/session), which wipes them.
type Tree struct {
	names *names.Cipher
	rand  io.Reader
	// fs makes every change to the backing store (nil: unobserved).
	fs     *backing.FS
	ep     *Epochs   // master-key epochs (epoch.go)
	ids    *DirIDs   // directory ID files (dirid.go)
	links  *Symlinks // symlink targets (symlink.go)
	xattrs *Xattrs   // extended attributes (xattr.go)
	// rb: rebinding on rename, link and unlink (rebinding.go): unbound,
	// or a rebinder with location binding (bound_rename.go).
	rb rebinding
}

// New builds the name, symlink and xattr ciphers from the vault's derived
// subkeys k. rand (nil: crypto/rand) supplies directory IDs and the nonces
// of symlinks and xattr values. fsys makes every change the tree makes to
// the backing store; nil makes them unobserved (see backing.FS).
func New(k *keys.Keys, rand io.Reader, fsys *backing.FS) (*Tree, error) {
	return newTree(k, rand, fsys, nil)
}

// newTree is New, with location binding b if not nil (NewBound).
func newTree(k *keys.Keys, rand io.Reader, fsys *backing.FS, b *Binding) (*Tree, error) {
	if rand == nil {
		rand = cryptorand.Reader
	}
	t := &Tree{rand: rand, fs: fsys}
	var err error
	if t.names, err = names.New(k.Names); err != nil {
		return nil, fmt.Errorf("tree: names: %w", err)
	}
	links, err := meta.NewSymlinks(k.Symlinks)
	if err != nil {
		return nil, fmt.Errorf("tree: symlinks: %w", err)
	}
	xattrs, err := meta.NewXattrs(k.XattrNames, k.XattrValues)
	if err != nil {
		return nil, fmt.Errorf("tree: xattrs: %w", err)
	}
	t.ep = &Epochs{base: t.names}
	t.ids = &DirIDs{rand: rand, fs: fsys, lay: v1Layout{}, ep: t.ep}
	t.rb = unbound{}
	t.links = &Symlinks{c: links, rand: rand, fs: fsys}
	t.xattrs = &Xattrs{c: xattrs, rand: rand, fs: fsys}
	if b != nil {
		// Location binding: the one place the strategy is chosen.
		t.ep.baseBinder = b.Binder
		t.ids.lay = v2Layout{vaultID: b.VaultID, ep: t.ep}
		t.rb = &rebinder{fs: fsys, bind: b, ids: t.ids}
	}
	return t, nil
}

// DirIDs returns the tree's directory ID files.
func (t *Tree) DirIDs() *DirIDs { return t.ids }

// Epochs returns the tree's master-key epochs.
func (t *Tree) Epochs() *Epochs { return t.ep }

// Symlinks returns the tree's symlink targets.
func (t *Tree) Symlinks() *Symlinks { return t.links }

// Xattrs returns the tree's extended attributes.
func (t *Tree) Xattrs() *Xattrs { return t.xattrs }

// NewFile wraps the fd of a file's contents, opened by a door, for the
// engine: when the vault's changes are observed (freshness, crash replay)
// its writes, truncates and fsyncs are reported like every change the
// tree makes, so that contents changed through the mount are recorded as
// those changed through the vault package are; unobserved, it is the
// plain backing.File (nothing added to the write path). st, if not nil,
// is fd's current stat (backing.NewFile).
func (t *Tree) NewFile(fd int, st *unix.Stat_t) fileengine.OwnedBacking {
	if t.fs.Observed() {
		return t.fs.NewFile(fd, st)
	}
	return backing.NewFile(fd, st)
}

// tempName returns a fresh name in the reserved namespace (from rand) for
// an entry that is about to be renamed over its final name.
func tempName(rand io.Reader) (string, error) {
	var b [12]byte
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		return "", err
	}
	return names.TempName(b[:]), nil
}
