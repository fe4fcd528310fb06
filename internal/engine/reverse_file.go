package engine

import (
	"errors"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"golang.org/x/sys/unix"
)

// ReverseFile is an open plaintext file as the view shows it: its stored
// (forward-format) form, sealed on the fly by the content engine
// (fileengine.ReverseFile) with the file ID derived from its path. Its size is
// fixed at open: the ciphertext follows that size even if the plaintext
// grows, and a read that finds the plaintext shorter fails with
// ErrChanged. It is read-only and safe for concurrent use.
type ReverseFile struct {
	bf   *backing.File
	rf   *fileengine.ReverseFile
	size int64 // plaintext size at open
}

// OpenFile opens the plaintext regular file rel without following
// symlinks (ESTALE if another type of file is there now) and prepares its
// sealing. Close it after the last read.
func (v *ReverseView) OpenFile(rel string) (*ReverseFile, error) {
	var fd int
	err := v.withParent(rel, func(pfd int, base string) error {
		var err error
		fd, err = backing.Openat(pfd, base, unix.O_RDONLY|unix.O_NOATIME)
		if errors.Is(err, unix.EPERM) { // O_NOATIME needs ownership
			fd, err = backing.Openat(pfd, base, unix.O_RDONLY)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	st, err := backing.Fstat(fd)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		err = ErrStale // replaced by another type of file
	}
	if err != nil {
		backing.Close(fd)
		return nil, err
	}
	bf := backing.NewFile(fd, &st)
	rf, err := v.r.core.OpenReverse(bf, st.Size, v.r.derive.FileID(rel), v.r.derive)
	if err != nil {
		bf.Close()
		return nil, err
	}
	return &ReverseFile{bf: bf, rf: rf, size: st.Size}, nil
}

// PlainSize is the plaintext size the file was opened with.
func (f *ReverseFile) PlainSize() int64 { return f.size }

// Size is the stored size: the header plus the sealed chunks.
func (f *ReverseFile) Size() int64 { return f.rf.Size() }

// ReadAt reads stored bytes like io.ReaderAt: io.EOF at or past the end,
// with the bytes before it when a read crosses the end.
func (f *ReverseFile) ReadAt(p []byte, off int64) (int, error) { return f.rf.ReadAt(p, off) }

// Close closes the plaintext file.
func (f *ReverseFile) Close() error { return f.bf.Close() }
