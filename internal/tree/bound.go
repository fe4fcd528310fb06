package tree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
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
// The v2 directory ID file (dirIDFileSizeV2 bytes):
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
	VaultID []byte       // 16 bytes: the root directory's parent ID
	Engine  *core.Engine // a bound engine, to rebind file headers
	// Links is the engine's LinkStore (links.go), for fsck; nil: none.
	Links *LinkStore
}

// FileSource returns the one engine File of the regular file backing in
// dirfd, found at place p, for rebinding its header, and a release
// function. The vault and the mount pass their open-file table
// (core.Table.AcquireAt), so that a File already open keeps the header on
// disk in its cache; without one the tree opens the file itself.
type FileSource func(dirfd int, backingName string, p bind.Place) (*core.File, func() error, error)

// Sizes of the v2 directory ID file.
const (
	dirIDVersionV2  = 2
	dirIDFileSizeV2 = 2 + 4 + names.DirIDSize + 2*bind.Size
	dirIDOffV2      = 6
	dirIDBindOffV2  = dirIDOffV2 + names.DirIDSize
)

// errNoPlace: a bound tree reads directory IDs with ReadDirIDAt.
var errNoPlace = errors.New("tree: the vault binds locations; read directory IDs with ReadDirIDAt")

// NewBound is New for a vault with location binding.
func NewBound(k *keys.Keys, rand io.Reader, fsys *backing.FS, b *Binding) (*Tree, error) {
	if b == nil || b.Binder == nil || len(b.VaultID) != bind.IDSize || b.Engine == nil || !b.Engine.Bound() {
		return nil, fmt.Errorf("tree: binding needs a binder, a %d-byte vault ID and a bound engine", bind.IDSize)
	}
	t, err := New(k, rand, fsys)
	if err != nil {
		return nil, err
	}
	t.bind = b
	return t, nil
}

// SetFiles sets the FileSource used to rebind file headers. Call it before
// the tree is used.
func (t *Tree) SetFiles(fs FileSource) { t.files = fs }

// Links returns the vault's links files (nil without binding).
func (t *Tree) Links() *LinkStore {
	if t.bind == nil {
		return nil
	}
	return t.bind.Links
}

// Bound reports whether the tree binds locations.
func (t *Tree) Bound() bool { return t.bind != nil }

// Place is where entry n of the directory with ID dirID is bound: the
// directory's ID (for an entry made under a conflicting directory ID,
// §7.1, that ID) and its full encrypted name (for a conflict copy, the
// original's: an alias's contents are checked against the name it is an
// alias of).
func (t *Tree) Place(dirID []byte, n Name) bind.Place {
	if n.altID != nil {
		dirID = n.altID
	}
	return bind.Place{ParentID: dirID, EncName: n.Enc}
}

// RootPlace is the root directory's place: (VaultID, "").
func (t *Tree) RootPlace() bind.Place {
	if t.bind == nil {
		return bind.Place{}
	}
	return bind.Place{ParentID: t.bind.VaultID}
}

// dirIDFileSize is the size of the directory ID file this tree writes.
func (t *Tree) dirIDFileSize() int {
	if t.bind != nil {
		return dirIDFileSizeV2
	}
	return names.DirIDSize
}

// dirIDFile returns the content of a directory ID file for id: the bare
// ID in v1, the v2 form bound to p (and to p2, if set) with binding.
func (t *Tree) dirIDFile(id []byte, epoch uint32, p bind.Place, p2 *bind.Place) []byte {
	if t.bind == nil {
		return id
	}
	b := make([]byte, dirIDFileSizeV2)
	binary.BigEndian.PutUint16(b[0:2], dirIDVersionV2)
	binary.BigEndian.PutUint32(b[2:6], epoch)
	copy(b[dirIDOffV2:], id)
	s := t.dirBinder(epoch).Sum(bind.KindDir, id, p)
	copy(b[dirIDBindOffV2:], s[:])
	if p2 != nil {
		s2 := t.dirBinder(epoch).Sum(bind.KindDir, id, *p2)
		copy(b[dirIDBindOffV2+bind.Size:], s2[:])
	}
	return b
}

// parseDirIDV2 splits a v2 directory ID file.
func parseDirIDV2(b []byte) (id []byte, epoch uint32, slots []bind.Binding, err error) {
	if len(b) != dirIDFileSizeV2 || binary.BigEndian.Uint16(b[0:2]) != dirIDVersionV2 {
		return nil, 0, nil, fmt.Errorf("%w: not a v2 directory ID file (%d bytes)", ErrCorruptDir, len(b))
	}
	slots = make([]bind.Binding, 2)
	copy(slots[0][:], b[dirIDBindOffV2:])
	copy(slots[1][:], b[dirIDBindOffV2+bind.Size:])
	return b[dirIDOffV2:dirIDBindOffV2], binary.BigEndian.Uint32(b[2:6]), slots, nil
}

// ReadDirIDAt reads the ID of the open backing directory dirfd found at
// place p (its parent's ID and its full encrypted name; RootPlace for the
// root). With binding, a directory not bound to p is bind.ErrMisplaced:
// a copied directory ID file, a directory moved or a subtree grafted
// there by someone without the key. Without binding p is ignored.
func (t *Tree) ReadDirIDAt(dirfd int, p bind.Place) ([]byte, error) {
	if t.bind == nil {
		return t.ReadDirID(dirfd)
	}
	return t.DirIDOf(ReadDirIDFile(dirfd), p)
}

// ReadRootDirID reads the root directory's ID (rootfd), checking its
// binding to RootPlace with binding.
func (t *Tree) ReadRootDirID(rootfd int) ([]byte, error) {
	return t.ReadDirIDAt(rootfd, t.RootPlace())
}

// readDirIDV2 reads and splits dirfd's v2 ID file.
func (t *Tree) readDirIDV2(dirfd int) ([]byte, uint32, []bind.Binding, error) {
	raw, err := checkedFile(ReadDirIDFile(dirfd), t.dirIDFileSize())
	if err != nil {
		return nil, 0, nil, err
	}
	return parseDirIDV2(raw)
}

// replaceDirIDFile atomically replaces the ID file of directory sub with
// data: a temporary file (written and fsynced) renamed over it
// (backing.FS.ReplaceFile). A crash leaves the old or the new file (and
// at worst a temporary file, which fsck reports as temp-file).
func (t *Tree) replaceDirIDFile(sub int, data []byte) error {
	tmp, err := t.tempName()
	if err != nil {
		return err
	}
	return t.fs.ReplaceFile(sub, tmp, sub, names.DirIDFile, data, 0o400, 0)
}

// openFile returns the File of regular file backingName in dirfd found at
// p, through the FileSource or, without one, opened here.
func (t *Tree) openFile(dirfd int, backingName string, p bind.Place) (*core.File, func() error, error) {
	if t.files != nil {
		return t.files(dirfd, backingName, p)
	}
	fd, _, err := backing.OpenRegular(dirfd, backingName, unix.O_RDWR)
	if err != nil {
		return nil, nil, err
	}
	bf := t.fs.NewFile(fd, nil)
	f, err := t.bind.Engine.OpenAt(bf, p)
	if err != nil {
		bf.Close()
		return nil, nil, err
	}
	return f, func() error { return errors.Join(f.Close(), bf.Close()) }, nil
}

// ReadDirIDUnchecked reads the ID of directory dirfd without checking
// where it is, and counts its bindings: for fsck, which reports a
// misplaced directory (ReadDirIDAt's bind.ErrMisplaced) and still checks
// what is inside it, and which reports a directory with a stale second
// binding (a crash during a rename of it: bound_rename.go). Without
// binding it is ReadDirID, with 0 bindings.
func (t *Tree) ReadDirIDUnchecked(dirfd int) (id []byte, bindings int, err error) {
	if t.bind == nil {
		id, err := t.ReadDirID(dirfd)
		return id, 0, err
	}
	return t.DirIDOfUnchecked(ReadDirIDFile(dirfd))
}

// RebindDir leaves directory dirfd bound to its place p only, dropping a
// stale second binding (fsck --repair of a crash during a rename: step 3
// of bound_rename.go was lost). A directory has one name, so a binding of
// another place is never needed: dropping it only stops the directory
// from being valid where it no longer is. The directory must be bound to
// p (bind.ErrMisplaced otherwise); the new ID file is durable on return.
func (t *Tree) RebindDir(dirfd int, p bind.Place) error {
	if t.bind == nil {
		return nil
	}
	id, epoch, slots, err := t.readDirIDV2(dirfd)
	if err != nil {
		return err
	}
	if err := t.checkDir(id, epoch, p, slots); err != nil {
		return fmt.Errorf("tree: directory ID: %w", err)
	}
	if err := t.replaceDirIDFile(dirfd, t.dirIDFile(id, epoch, p, nil)); err != nil {
		return err
	}
	return t.fs.Fsync(dirfd)
}

// DirIDFileAt returns the v2 directory ID file that binds ID id to place
// p (encryptfs upgrade writes it over a v1 one, or over a v1 conflict
// copy); nil without binding. Epoch 0: a v1 directory's names were
// encrypted under the vault's first key, and a vault gets epochs (§3b) only
// once it binds.
func (t *Tree) DirIDFileAt(id []byte, p bind.Place) []byte {
	if t.bind == nil {
		return nil
	}
	return t.dirIDFile(id, 0, p, nil)
}
