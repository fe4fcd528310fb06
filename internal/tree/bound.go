package tree

import (
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/fileengine"
)

// Location binding (format v2, feature flag "BoundLocations";
// docs/design/format-v2.md §4). A directory's encryptfs.dirid and a
// regular file's header carry bindings (internal/crypto/bind) of the
// object to its place: its parent directory's ID and its full encrypted
// name. A directory or file found where none of its bindings points is
// bind.ErrMisplaced (EIO; fsck: misplaced-dir, misplaced-file). The root's
// place is (VaultID, ""). Renames rebind the one object renamed, never its
// children (renameBound).
//
// The v2 directory ID file (dirIDFileSizeV2 bytes; dirid.go reads and
// writes it):
//
//	version u16 = 2 ‖ epoch u32 ‖ dirID (16) ‖ binding[0] (16) ‖ binding[1] (16)
//
// No MAC over the file: each binding is a MAC over the dirID and the
// place, so a file whose dirID was replaced fails every binding, and one
// copied to another directory fails there. What the bindings leave out
// (version, epoch, the other slot) cannot make a directory readable where
// it is not bound: a forged second slot is a 2^-128 guess, and an old
// binding of the same directory put back is a rollback (freshness, §6).
// The epoch (master-key epochs, epoch.go) selects the binding key the
// bindings are checked with, so it is authenticated through them.

// Binding turns on location binding for a Tree (NewBound).
type Binding struct {
	Binder  *bind.Binder
	VaultID []byte             // 16 bytes: the root directory's parent ID
	Engine  *fileengine.Engine // a bound engine, to rebind file headers
	// Links is the engine's LinkStore (links.go), for fsck; nil: none.
	Links *LinkStore
}

// FileSource returns the one engine File of the regular file backing in
// dirfd, found at place p, for rebinding its header, and a release
// function. The vault and the mount pass their open-file table
// (fileengine.Table.AcquireAt), so that a File already open keeps the header on
// disk in its cache; without one the tree opens the file itself.
type FileSource func(dirfd int, backingName string, p bind.Place) (*fileengine.File, func() error, error)

// errNoPlace: a bound tree needs the directory's ID (a Dir built with it)
// for the call.
var errNoPlace = errors.New("tree: the vault binds locations; the call needs the directory's ID")

// NewBound is New for a vault with location binding.
func NewBound(k *keys.Keys, rand io.Reader, fsys *backing.FS, b *Binding) (*Tree, error) {
	if b == nil || b.Binder == nil || len(b.VaultID) != bind.IDSize || b.Engine == nil || !b.Engine.Bound() {
		return nil, fmt.Errorf("tree: binding needs a binder, a %d-byte vault ID and a bound engine", bind.IDSize)
	}
	return newTree(k, rand, fsys, b)
}

// SetFiles sets the FileSource used to rebind file headers. Call it before
// the tree is used.
func (t *Tree) SetFiles(fs FileSource) { t.rb.setFiles(fs) }

// Links returns the vault's links files (nil without binding).
func (t *Tree) Links() *LinkStore { return t.rb.links() }

// Bound reports whether the tree binds locations.
func (t *Tree) Bound() bool { return t.rb.bound() }

// Place is where entry n of the directory with ID dirID is bound: the
// directory's ID (for an entry made under a conflicting directory ID,
// §7.1, that ID) and its full encrypted name (for a conflict copy, the
// original's: an alias's contents are checked against the name it is an
// alias of).
func (t *Tree) Place(dirID []byte, n Name) bind.Place { return placeOf(dirID, n) }

// placeOf is Place.
func placeOf(dirID []byte, n Name) bind.Place {
	if n.altID != nil {
		dirID = n.altID
	}
	return bind.Place{ParentID: dirID, EncName: n.Enc}
}

// RootPlace is the root directory's place: (VaultID, ""); the zero Place
// without binding.
func (t *Tree) RootPlace() bind.Place { return t.ids.lay.rootPlace() }
