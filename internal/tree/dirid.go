package tree

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// DirIDs is the part of a Tree that owns one rule: a directory's ID is
// read from its encryptfs.dirid only through these methods, which refuse
// a file that is not a regular file of the layout's size (ErrCorruptDir)
// and, with location binding, one that does not bind the ID to the
// directory's place (bind.ErrMisplaced), noting the epoch of every file
// that verified (Epochs). It also writes ID files (new directories, the
// root, rebinding) and reads the conflict copies a sync tool leaves beside
// them (altdir.go).
//
// The v1 file is the bare 16-byte ID. The v2 directory ID file
// (dirIDFileSizeV2 bytes; bound.go says why it needs no MAC):
//
//	version u16 = 2 ‖ epoch u32 ‖ dirID (16) ‖ binding[0] (16) ‖ binding[1] (16)
type DirIDs struct {
	rand io.Reader
	fs   *backing.FS
	bind *Binding // nil: v1 layout
	ep   *Epochs
}

// Sizes of the v2 directory ID file.
const (
	dirIDVersionV2  = 2
	dirIDFileSizeV2 = 2 + 4 + names.DirIDSize + 2*bind.Size
	dirIDOffV2      = 6
	dirIDBindOffV2  = dirIDOffV2 + names.DirIDSize
)

// New returns a fresh random directory ID.
func (ids *DirIDs) New() ([]byte, error) {
	id := make([]byte, names.DirIDSize)
	if _, err := io.ReadFull(ids.rand, id); err != nil {
		return nil, fmt.Errorf("tree: random dirID: %w", err)
	}
	return id, nil
}

// Read reads the ID of the open backing directory dirfd found at place p
// (its parent's ID and its full encrypted name; Tree.RootPlace for the
// root). With binding, a directory not bound to p is bind.ErrMisplaced: a
// copied directory ID file, a directory moved or a subtree grafted there
// by someone without the key. Without binding p is ignored. A missing,
// oversized or non-regular encryptfs.dirid (a FIFO planted there must not
// hang the caller: backing.ReadFileAt opens it non-blocking and checks its
// type; a symlink is refused by O_NOFOLLOW with ELOOP) is ErrCorruptDir.
func (ids *DirIDs) Read(dirfd int, p bind.Place) ([]byte, error) {
	return ids.Of(ReadDirIDFile(dirfd), p)
}

// Of is Read of an ID file read already (r, ReadDirIDFile): the
// directory's ID, checked to be bound to p with binding.
func (ids *DirIDs) Of(r DirIDRead, p bind.Place) ([]byte, error) {
	raw, err := checkedFile(r, ids.fileSize())
	if err != nil {
		return nil, err
	}
	if ids.bind == nil {
		return dirIDV1(raw)
	}
	id, epoch, slots, err := parseDirIDV2(raw)
	if err != nil {
		return nil, err
	}
	if err := ids.ep.check(id, epoch, p, slots); err != nil {
		return nil, fmt.Errorf("tree: directory ID: %w", err)
	}
	return id, nil
}

// ReadRoot reads the root directory's ID (rootfd), checking its binding
// to the root's place with binding.
func (ids *DirIDs) ReadRoot(rootfd int) ([]byte, error) {
	return ids.Read(rootfd, ids.bind.rootPlace())
}

// readV2 reads and splits dirfd's v2 ID file.
func (ids *DirIDs) readV2(dirfd int) ([]byte, uint32, []bind.Binding, error) {
	raw, err := checkedFile(ReadDirIDFile(dirfd), ids.fileSize())
	if err != nil {
		return nil, 0, nil, err
	}
	return parseDirIDV2(raw)
}

// ReadUnchecked reads the ID of directory dirfd without checking where it
// is, and counts its bindings: for fsck, which reports a misplaced
// directory (Read's bind.ErrMisplaced) and still checks what is inside
// it, and which reports a directory with a stale second binding (a crash
// during a rename of it: bound_rename.go). Without binding it is Read,
// with 0 bindings.
func (ids *DirIDs) ReadUnchecked(dirfd int) (id []byte, bindings int, err error) {
	return ids.OfUnchecked(ReadDirIDFile(dirfd))
}

// OfUnchecked is ReadUnchecked of an ID file read already (r).
func (ids *DirIDs) OfUnchecked(r DirIDRead) (id []byte, bindings int, err error) {
	raw, err := checkedFile(r, ids.fileSize())
	if err != nil {
		return nil, 0, err
	}
	if ids.bind == nil {
		id, err := dirIDV1(raw)
		return id, 0, err
	}
	id, epoch, slots, err := parseDirIDV2(raw)
	if err != nil {
		return nil, 0, err
	}
	// Unchecked: fsck reads names under the directory's epoch even where
	// it is misplaced. An epoch without keys is a corrupt ID file. Only a
	// hint (epoch.go): it decrypts names of an ID no verified ID file has
	// spoken for, and never picks the key a new name is encrypted with.
	if !ids.ep.known(epoch) {
		return nil, 0, fmt.Errorf("%w: master-key epoch %d has no key here", ErrCorruptDir, epoch)
	}
	ids.ep.addHint(id, epoch)
	for _, s := range slots {
		if !s.IsZero() {
			bindings++
		}
	}
	return id, bindings, nil
}

// Rebind leaves directory dirfd bound to its place p only, dropping a
// stale second binding (fsck --repair of a crash during a rename: step 3
// of bound_rename.go was lost). A directory has one name, so a binding of
// another place is never needed: dropping it only stops the directory
// from being valid where it no longer is. The directory must be bound to
// p (bind.ErrMisplaced otherwise); the new ID file is durable on return.
func (ids *DirIDs) Rebind(dirfd int, p bind.Place) error {
	if ids.bind == nil {
		return nil
	}
	id, epoch, slots, err := ids.readV2(dirfd)
	if err != nil {
		return err
	}
	if err := ids.ep.check(id, epoch, p, slots); err != nil {
		return fmt.Errorf("tree: directory ID: %w", err)
	}
	if err := ids.replaceFile(dirfd, ids.file(id, epoch, p, nil)); err != nil {
		return err
	}
	return ids.fs.Fsync(dirfd)
}

// FileAt returns the v2 directory ID file that binds ID id to place p
// (encryptfs upgrade writes it over a v1 one, or over a v1 conflict copy);
// nil without binding. Epoch 0: a v1 directory's names were encrypted
// under the vault's first key, and a vault gets epochs (§3b) only once it
// binds.
func (ids *DirIDs) FileAt(id []byte, p bind.Place) []byte {
	if ids.bind == nil {
		return nil
	}
	return ids.file(id, 0, p, nil)
}

// InitRoot gives a new vault's root directory (rootfd) its ID. It fails
// with EEXIST if the root already has one.
func (ids *DirIDs) InitRoot(rootfd int) ([]byte, error) {
	id, err := ids.New()
	if err != nil {
		return nil, err
	}
	if err := ids.write(rootfd, id, ids.bind.rootPlace()); err != nil {
		return nil, fmt.Errorf("tree: write root %s: %w", names.DirIDFile, err)
	}
	if err := ids.fs.Fsync(rootfd); err != nil {
		return nil, err
	}
	return id, nil
}

// write stores the ID file of directory dirfd, whose ID is id and whose
// place is p (with binding: see bound.go): written as 0600, fsynced, then
// made 0400.
func (ids *DirIDs) write(dirfd int, id []byte, p bind.Place) error {
	ids.ep.note(id, ids.ep.current) // a new directory: the current epoch
	return ids.fs.WriteFileAt(dirfd, names.DirIDFile, ids.file(id, ids.ep.current, p, nil), 0o400)
}

// replaceFile atomically replaces the ID file of directory sub with data:
// a temporary file (written and fsynced) renamed over it
// (backing.FS.ReplaceFile). A crash leaves the old or the new file (and
// at worst a temporary file, which fsck reports as temp-file).
func (ids *DirIDs) replaceFile(sub int, data []byte) error {
	tmp, err := tempName(ids.rand)
	if err != nil {
		return err
	}
	return ids.fs.ReplaceFile(sub, tmp, sub, names.DirIDFile, data, 0o400, 0)
}

// fileSize is the size of an ID file in this vault's layout.
func (ids *DirIDs) fileSize() int {
	if ids.bind != nil {
		return dirIDFileSizeV2
	}
	return names.DirIDSize
}

// file is the ID file of directory id, of epoch epoch, at place p (and
// also at p2 if not nil, for the middle of a rename): the ID itself
// without binding.
func (ids *DirIDs) file(id []byte, epoch uint32, p bind.Place, p2 *bind.Place) []byte {
	if ids.bind == nil {
		return id
	}
	b := make([]byte, dirIDFileSizeV2)
	binary.BigEndian.PutUint16(b[0:2], dirIDVersionV2)
	binary.BigEndian.PutUint32(b[2:6], epoch)
	copy(b[dirIDOffV2:], id)
	s := ids.ep.binder(epoch).Sum(bind.KindDir, id, p)
	copy(b[dirIDBindOffV2:], s[:])
	if p2 != nil {
		s2 := ids.ep.binder(epoch).Sum(bind.KindDir, id, *p2)
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
