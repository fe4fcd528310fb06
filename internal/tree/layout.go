package tree

import (
	"encoding/binary"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// idLayout is the layout of a vault's directory ID files, chosen once in
// newTree from whether the vault binds locations: v1Layout (the bare ID:
// format 1 and unbound format-2 vaults) or v2Layout (location binding,
// bound.go). DirIDs calls it instead of asking, in every method, whether
// the vault binds; the bytes each writes are those of docs/format.md.
type idLayout interface {
	// size is the size of an ID file.
	size() int
	// rootPlace is the root directory's place (the zero Place in v1).
	rootPlace() bind.Place
	// id returns the ID in ID file raw (size bytes, checkedFile) of a
	// directory found at p: in v2 checked to be bound to p, its epoch
	// noted.
	id(raw []byte, p bind.Place) ([]byte, error)
	// idUnchecked is id without the place check, with the number of
	// bindings the file holds (DirIDs.OfUnchecked).
	idUnchecked(raw []byte) (id []byte, bindings int, err error)
	// file is the ID file of directory id, of epoch epoch, at place p
	// (and also at p2 if not nil, for the middle of a rename).
	file(id []byte, epoch uint32, p bind.Place, p2 *bind.Place) []byte
	// fileAt is DirIDs.FileAt: the v2 file of id at p, nil in v1.
	fileAt(id []byte, p bind.Place) []byte
	// alt reads conflict copy name of dirfd's ID file (altdir.go). place
	// returns the directory's place (nil: unknown); only v2 asks for it.
	alt(dirfd int, name string, place func() *bind.Place) ([]byte, error)
	// rebind is DirIDs.Rebind; nothing to do in v1.
	rebind(ids *DirIDs, dirfd int, p bind.Place) error
}

// v1Layout: the ID file is the bare 16-byte ID, bound to nothing.
type v1Layout struct{}

func (v1Layout) size() int             { return names.DirIDSize }
func (v1Layout) rootPlace() bind.Place { return bind.Place{} }

func (v1Layout) id(raw []byte, _ bind.Place) ([]byte, error) { return dirIDV1(raw) }

func (v1Layout) idUnchecked(raw []byte) ([]byte, int, error) {
	id, err := dirIDV1(raw)
	return id, 0, err
}

func (v1Layout) file(id []byte, _ uint32, _ bind.Place, _ *bind.Place) []byte { return id }
func (v1Layout) fileAt([]byte, bind.Place) []byte                             { return nil }
func (v1Layout) rebind(*DirIDs, int, bind.Place) error                        { return nil }

func (v1Layout) alt(dirfd int, name string, _ func() *bind.Place) ([]byte, error) {
	id, err := backing.ReadFileAt(dirfd, name, names.DirIDSize)
	if err == nil && len(id) != names.DirIDSize {
		err = ErrCorruptDir
	}
	return id, err
}

// v2Layout: the v2 directory ID file (dirid.go), whose bindings are
// checked under the keys of the file's epoch (ep).
type v2Layout struct {
	vaultID []byte // the root directory's parent ID
	ep      *Epochs
}

func (l v2Layout) size() int             { return dirIDFileSizeV2 }
func (l v2Layout) rootPlace() bind.Place { return bind.Place{ParentID: l.vaultID} }

func (l v2Layout) id(raw []byte, p bind.Place) ([]byte, error) {
	id, epoch, slots, err := parseDirIDV2(raw)
	if err != nil {
		return nil, err
	}
	if err := l.ep.check(id, epoch, p, slots); err != nil {
		return nil, fmt.Errorf("tree: directory ID: %w", err)
	}
	return id, nil
}

func (l v2Layout) idUnchecked(raw []byte) (id []byte, bindings int, err error) {
	id, epoch, slots, err := parseDirIDV2(raw)
	if err != nil {
		return nil, 0, err
	}
	// Unchecked: fsck reads names under the directory's epoch even where
	// it is misplaced. An epoch without keys is a corrupt ID file. Only a
	// hint (epoch.go): it decrypts names of an ID no verified ID file has
	// spoken for, and never picks the key a new name is encrypted with.
	if !l.ep.known(epoch) {
		return nil, 0, fmt.Errorf("%w: master-key epoch %d has no key here", ErrCorruptDir, epoch)
	}
	l.ep.addHint(id, epoch)
	for _, s := range slots {
		if !s.IsZero() {
			bindings++
		}
	}
	return id, bindings, nil
}

func (l v2Layout) file(id []byte, epoch uint32, p bind.Place, p2 *bind.Place) []byte {
	b := make([]byte, dirIDFileSizeV2)
	binary.BigEndian.PutUint16(b[0:2], dirIDVersionV2)
	binary.BigEndian.PutUint32(b[2:6], epoch)
	copy(b[dirIDOffV2:], id)
	s := l.ep.binder(epoch).Sum(bind.KindDir, id, p)
	copy(b[dirIDBindOffV2:], s[:])
	if p2 != nil {
		s2 := l.ep.binder(epoch).Sum(bind.KindDir, id, *p2)
		copy(b[dirIDBindOffV2+bind.Size:], s2[:])
	}
	return b
}

// fileAt is of epoch 0: a v1 directory's names were encrypted under the
// vault's first key, and a vault gets epochs (§3b) only once it binds.
func (l v2Layout) fileAt(id []byte, p bind.Place) []byte { return l.file(id, 0, p, nil) }

// alt checks that the copy binds its ID to the directory's place: a copy
// planted from another directory would otherwise make its entries
// readable here. Without a place every copy is invalid.
func (l v2Layout) alt(dirfd int, name string, place func() *bind.Place) ([]byte, error) {
	p := place()
	if p == nil {
		return nil, errNoPlace
	}
	raw, err := backing.ReadFileAt(dirfd, name, dirIDFileSizeV2)
	if err != nil {
		return nil, err
	}
	id, epoch, slots, err := parseDirIDV2(raw)
	if err != nil {
		return nil, err
	}
	if err := l.ep.check(id, epoch, *p, slots); err != nil {
		return nil, err
	}
	return id, nil
}

func (l v2Layout) rebind(ids *DirIDs, dirfd int, p bind.Place) error {
	id, epoch, slots, err := ids.readV2(dirfd)
	if err != nil {
		return err
	}
	if err := l.ep.check(id, epoch, p, slots); err != nil {
		return fmt.Errorf("tree: directory ID: %w", err)
	}
	if err := ids.replaceFile(dirfd, l.file(id, epoch, p, nil)); err != nil {
		return err
	}
	return ids.fs.Fsync(dirfd)
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
