package tree

import (
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
	lay  idLayout // v1Layout or v2Layout (layout.go), chosen in newTree
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
	raw, err := checkedFile(r, ids.lay.size())
	if err != nil {
		return nil, err
	}
	return ids.lay.id(raw, p)
}

// ReadRoot reads the root directory's ID (rootfd), checking its binding
// to the root's place with binding.
func (ids *DirIDs) ReadRoot(rootfd int) ([]byte, error) {
	return ids.Read(rootfd, ids.lay.rootPlace())
}

// readV2 reads and splits dirfd's v2 ID file.
func (ids *DirIDs) readV2(dirfd int) ([]byte, uint32, []bind.Binding, error) {
	raw, err := checkedFile(ReadDirIDFile(dirfd), ids.lay.size())
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
	raw, err := checkedFile(r, ids.lay.size())
	if err != nil {
		return nil, 0, err
	}
	return ids.lay.idUnchecked(raw)
}

// Rebind leaves directory dirfd bound to its place p only, dropping a
// stale second binding (fsck --repair of a crash during a rename: step 3
// of bound_rename.go was lost). A directory has one name, so a binding of
// another place is never needed: dropping it only stops the directory
// from being valid where it no longer is. The directory must be bound to
// p (bind.ErrMisplaced otherwise); the new ID file is durable on return.
// Without binding there is nothing to drop.
func (ids *DirIDs) Rebind(dirfd int, p bind.Place) error {
	return ids.lay.rebind(ids, dirfd, p)
}

// FileAt returns the v2 directory ID file that binds ID id to place p
// (encryptfs upgrade writes it over a v1 one, or over a v1 conflict copy);
// nil without binding. Epoch 0: a v1 directory's names were encrypted
// under the vault's first key, and a vault gets epochs (§3b) only once it
// binds.
func (ids *DirIDs) FileAt(id []byte, p bind.Place) []byte {
	return ids.lay.fileAt(id, p)
}

// InitRoot gives a new vault's root directory (rootfd) its ID. It fails
// with EEXIST if the root already has one.
func (ids *DirIDs) InitRoot(rootfd int) ([]byte, error) {
	id, err := ids.New()
	if err != nil {
		return nil, err
	}
	if err := ids.write(rootfd, id, ids.lay.rootPlace()); err != nil {
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
	return ids.fs.WriteFileAt(dirfd, names.DirIDFile, ids.lay.file(id, ids.ep.current, p, nil), 0o400)
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
