package tree

import (
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// Sizes of the directory ID file (docs/format.md §7, §14): the bare ID
// of format 1, the bound form of format 2.
const (
	DirIDFileSizeV1 = names.DirIDSize
	DirIDFileSizeV2 = dirIDFileSizeV2
)

// DirIDFile is an encryptfs.dirid as stored, split but not checked: the
// bindings of a v2 file are MACs the tree checks at the directory's
// place (DirIDs.Read).
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

// maxDirIDFileRead bounds what is read of an ID file: far above either
// form, so that a malformed one is seen whole by those who digest it
// (freshness), and no size the storage claims sizes the read beyond it.
const maxDirIDFileRead = 4096

// DirIDRead is a directory's ID file as read raw, once (ReadDirIDFile):
// its bytes, or why it could not be read. The tree's checks (DirIDs.Of,
// DirIDs.OfUnchecked) and ParseDirIDFile work on it, so that a walk reads
// each ID file once however many of them look at it.
type DirIDRead struct {
	Raw []byte
	Err error
}

// ReadDirIDFile reads dirfd's encryptfs.dirid through internal/backing:
// no symlink followed, no FIFO opened, at most maxDirIDFileRead bytes.
func ReadDirIDFile(dirfd int) DirIDRead {
	raw, err := backing.ReadFileAt(dirfd, names.DirIDFile, maxDirIDFileRead)
	return DirIDRead{Raw: raw, Err: err}
}

// checkedFile returns r's bytes with the checks of the file's type and
// size: a missing, oversized (over limit, the size of the form the tree
// reads) or non-regular file is ErrCorruptDir.
func checkedFile(r DirIDRead, limit int) ([]byte, error) {
	err := r.Err
	if err == nil && len(r.Raw) > limit {
		err = fmt.Errorf("%w: %s", backing.ErrTooBig, names.DirIDFile)
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, backing.ErrTooBig) || errors.Is(err, backing.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %v", ErrCorruptDir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("tree: read %s: %w", names.DirIDFile, err)
	}
	return r.Raw, nil
}

// dirIDV1 checks a v1 ID file: the bare 16-byte ID.
func dirIDV1(raw []byte) ([]byte, error) {
	if len(raw) != names.DirIDSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorruptDir, len(raw))
	}
	return raw, nil
}
