package tree

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// Sizes of the directory ID file (docs/format.md §7, §14): the bare ID
// of format 1, the bound form of format 2.
const (
	DirIDFileSizeV1 = names.DirIDSize
	DirIDFileSizeV2 = dirIDFileSizeV2
)

// DirIDFile is an encryptfs.dirid as stored, split but not checked: the
// bindings of a v2 file are MACs the tree checks at the directory's
// place (ReadDirIDAt).
type DirIDFile struct {
	ID       []byte // the directory ID (16 bytes)
	V2       bool   // the bound form
	Epoch    uint32 // v2: the master-key epoch of the bindings
	Bindings []bind.Binding
}

// ParseDirIDFile splits the contents of a directory ID file: the bare
// 16-byte ID, or the v2 form (version 2 ‖ epoch ‖ ID ‖ two bindings);
// anything else is ErrCorruptDir. The one parser of the layout, for
// those who read the file raw (freshness, the content upgrade).
func ParseDirIDFile(b []byte) (DirIDFile, error) {
	switch len(b) {
	case DirIDFileSizeV1:
		return DirIDFile{ID: b}, nil
	case DirIDFileSizeV2:
		id, epoch, slots, err := parseDirIDV2(b)
		if err != nil {
			return DirIDFile{}, err
		}
		return DirIDFile{ID: id, V2: true, Epoch: epoch, Bindings: slots}, nil
	}
	return DirIDFile{}, fmt.Errorf("%w: a directory ID file of %d bytes", ErrCorruptDir, len(b))
}
