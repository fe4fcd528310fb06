package backing

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// The space operations below are optional methods of the engine's backing
// file (internal/fileengine): the engine asks for them with a type assertion and
// does without where a backing lacks them. They are here, and not in the
// engine, because they are system calls on a backing fd.

// ReserveSpace allocates the backing blocks of [off, off+length) without
// changing the file size (fallocate FALLOC_FL_KEEP_SIZE), so that a write
// into that range cannot fail for lack of space. It returns an error only
// when the space is short (ENOSPC, EDQUOT, wrapped): where the file system
// cannot reserve (no fallocate, or any other refusal) it returns nil and the
// write goes ahead unreserved, as it would without this method.
func (f *File) ReserveSpace(off, length int64) error { return ReserveSpace(int(f.fd), off, length) }

// PunchHole deallocates [off, off+length) (fallocate FALLOC_FL_PUNCH_HOLE |
// FALLOC_FL_KEEP_SIZE): the range reads as zeros and the size is unchanged.
// An error (for example EOPNOTSUPP) means nothing was punched; the caller
// writes zeros instead.
func (f *File) PunchHole(off, length int64) error { return PunchHole(int(f.fd), off, length) }

// SeekHole returns the offset of the first hole at or after off
// (lseek SEEK_HOLE); the end of the file counts as a hole. A file system
// without hole tracking reports the whole file as data: callers may use the
// answer to find a hole quickly, never to conclude that there is none.
func (f *File) SeekHole(off int64) (int64, error) { return SeekHole(int(f.fd), off) }

// SeekData returns the offset of the first data at or after off (lseek
// SEEK_DATA), or io.EOF when only a hole follows off to the end of the
// file (ENXIO). A file system without hole tracking reports the whole
// file as data; every byte it skips reads as zeros.
func (f *File) SeekData(off int64) (int64, error) { return SeekData(int(f.fd), off) }

// ReserveSpace is File.ReserveSpace on a raw fd (for an *os.File's Fd).
func ReserveSpace(fd int, off, length int64) error {
	if length <= 0 {
		return nil
	}
	err := retry(func() error { return unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, off, length) })
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return fmt.Errorf("backing: reserve %d bytes at %d: %w", length, off, err)
	}
	return nil
}

// PunchHole is File.PunchHole on a raw fd.
func PunchHole(fd int, off, length int64) error {
	if length <= 0 {
		return nil
	}
	err := retry(func() error {
		return unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, length)
	})
	if err != nil {
		return fmt.Errorf("backing: punch %d bytes at %d: %w", length, off, err)
	}
	return nil
}

// SeekHole is File.SeekHole on a raw fd. It moves the fd's file offset,
// which pread and pwrite do not use.
func SeekHole(fd int, off int64) (int64, error) {
	pos, err := unix.Seek(fd, off, unix.SEEK_HOLE)
	if err != nil {
		return 0, fmt.Errorf("backing: seek hole from %d: %w", off, err)
	}
	return pos, nil
}

// SeekData is File.SeekData on a raw fd. It moves the fd's file offset,
// which pread and pwrite do not use.
func SeekData(fd int, off int64) (int64, error) {
	pos, err := unix.Seek(fd, off, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		return 0, io.EOF
	}
	if err != nil {
		return 0, fmt.Errorf("backing: seek data from %d: %w", off, err)
	}
	return pos, nil
}

// AllocatedBytes is the space a file's blocks take (st_blocks × 512) as
// told by a FileInfo of File.Stat or of os.File.Stat; false for a
// FileInfo without a stat behind it.
func AllocatedBytes(fi fs.FileInfo) (int64, bool) {
	switch st := fi.Sys().(type) {
	case *unix.Stat_t:
		return st.Blocks * 512, true
	case *syscall.Stat_t:
		return st.Blocks * 512, true
	}
	return 0, false
}
