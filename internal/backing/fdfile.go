package backing

import (
	"io"
	"io/fs"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// File is an open backing file used through its raw fd: the engine's
// Backing (ReadAt, WriteAt, Truncate, Stat, Sync, Fd, and the optional
// ReserveSpace, PunchHole and SeekHole of space.go). Compared with an
// *os.File it saves, per open, the fcntl of os.NewFile and the fstat of
// the engine's first Stat (NewFile takes the stat its caller already
// made), and per read or write the poller's reference counting: small-file
// workloads through FUSE pay for every syscall of an open. The caller
// closes the fd (Close) only after the last use: there is no
// use-after-close protection as in *os.File.
type File struct {
	fd    int
	first atomic.Pointer[unix.Stat_t] // answered by the first Stat, then dropped
}

// NewFile wraps fd; st, if not nil, is its current stat, which the first
// Stat call returns instead of asking again. Its writes, truncates and
// fsyncs are not reported: it is for reading, and for the plain half of
// an (*FS).NewFile, through which every file written in CIPHERDIR is
// wrapped.
func NewFile(fd int, st *unix.Stat_t) *File {
	f := &File{fd: fd}
	if st != nil {
		c := *st
		f.first.Store(&c)
	}
	return f
}

// Fd returns the file descriptor.
func (f *File) Fd() uintptr { return uintptr(f.fd) }

// Close closes the fd.
func (f *File) Close() error { return Close(f.fd) }

// ReadAt reads len(p) bytes at off unless the file ends first (then io.EOF
// with the bytes read), as io.ReaderAt asks.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		k, err := retryN(func() (int, error) { return unix.Pread(f.fd, p[n:], off+int64(n)) })
		if err != nil {
			return n, &fs.PathError{Op: "pread", Path: "backing", Err: err}
		}
		if k == 0 {
			return n, io.EOF
		}
		n += k
	}
	return n, nil
}

// WriteAt writes all of p at off.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		k, err := retryN(func() (int, error) { return unix.Pwrite(f.fd, p[n:], off+int64(n)) })
		if err != nil {
			return n, &fs.PathError{Op: "pwrite", Path: "backing", Err: err}
		}
		if k == 0 {
			return n, io.ErrShortWrite
		}
		n += k
	}
	return n, nil
}

// Truncate sets the file's size.
func (f *File) Truncate(size int64) error {
	return retry(func() error { return unix.Ftruncate(f.fd, size) })
}

// Sync flushes the file to stable storage.
func (f *File) Sync() error { return fsync(f.fd) }

// Stat returns the file's size, mode and times.
func (f *File) Stat() (fs.FileInfo, error) {
	if st := f.first.Swap(nil); st != nil {
		return statInfo{*st}, nil
	}
	st, err := Fstat(f.fd)
	if err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: "backing", Err: err}
	}
	return statInfo{st}, nil
}

// statInfo is a fs.FileInfo of a backing stat.
type statInfo struct{ st unix.Stat_t }

func (s statInfo) Name() string       { return "backing" }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (s statInfo) Sys() any           { return &s.st }

// Mode returns the permission and type bits in fs.FileMode form.
func (s statInfo) Mode() fs.FileMode { return FileMode(s.st.Mode) }

// FileMode converts a stat st_mode to fs.FileMode (type, permission, setuid,
// setgid and sticky bits).
func FileMode(mode uint32) fs.FileMode {
	m := fs.FileMode(mode & 0o777)
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
