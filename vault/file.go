package vault

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/encryptfs/encryptfs/internal/engine"
	"golang.org/x/sys/unix"
)

// File is an open plaintext file of a vault, like *os.File: ReadAt and
// WriteAt may run concurrently; Read, Write and Seek share an offset. It
// holds a reference to its inode's one engine file (engine.File), shared
// with every other File and door that has the inode open: the engine
// caches the size and last chunk, so two engine files on one inode would
// disagree.
type File struct {
	v     *Vault
	name  string
	ef    *engine.File
	flag  int
	mu    sync.Mutex // guards off and closed
	off   int64
	close bool
}

// Open opens a file for reading.
func (v *Vault) Open(name string) (*File, error) { return v.OpenFile(name, os.O_RDONLY, 0) }

// Create creates or truncates a file (mode 0644) for reading and writing.
func (v *Vault) Create(name string) (*File, error) {
	return v.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// OpenFile opens a regular file with os.OpenFile's flags (O_RDONLY,
// O_WRONLY, O_RDWR, O_CREATE, O_EXCL, O_TRUNC, O_APPEND) and perm for a new
// file.
func (v *Vault) OpenFile(name string, flag int, perm fs.FileMode) (*File, error) {
	f, err := v.openFile(name, flag, perm)
	return f, pathErr("open", name, err)
}

// openFile opens name through the engine's place-checked open
// (engine.Dir.Open), which shares an inode open already and handles the
// race with a rename. A writer cannot share an engine file that sits on
// a read-only backing fd (it would have to reopen it under the readers):
// that open fails with ETXTBSY (engine.ErrBusy).
func (v *Vault) openFile(name string, flag int, perm fs.FileMode) (*File, error) {
	ref, err := v.resolve(name)
	if err != nil {
		return nil, err
	}
	defer ref.release()
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if writable || flag&os.O_TRUNC != 0 {
		if err := ref.name.ReadOnly(); err != nil {
			return nil, err
		}
	}
	o := engine.OpenOptions{ForWrite: writable}
	var ef *engine.File
	if flag&os.O_CREATE != 0 {
		ef, err = ref.parent.Create(ref.name, 0, uint32(perm.Perm()), o)
		if err == nil {
			ref.parent.Sync()
		} else if !errors.Is(err, unix.EEXIST) || flag&os.O_EXCL != 0 {
			return nil, err
		}
	}
	if ef == nil {
		if ef, err = ref.parent.Open(ref.name, o); err != nil {
			return nil, err
		}
	}
	f := &File{v: v, name: name, ef: ef, flag: flag}
	if flag&os.O_TRUNC != 0 && writable {
		if err := ef.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// Name returns the path the file was opened with.
func (f *File) Name() string { return f.name }

func (f *File) check(write bool) error {
	f.mu.Lock()
	closed := f.close
	f.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case write && f.flag&(os.O_WRONLY|os.O_RDWR) == 0:
		return unix.EBADF
	case !write && f.flag&os.O_WRONLY != 0:
		return unix.EBADF
	}
	return nil
}

// ReadAt reads len(p) bytes at off (io.EOF at the end, like os.File).
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check(false); err != nil {
		return 0, pathErr("read", f.name, err)
	}
	n, err := f.ef.ReadAt(p, off)
	if err == io.EOF {
		return n, err
	}
	return n, pathErr("read", f.name, err)
}

// WriteAt writes p at off, growing the file as needed.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check(true); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	if f.flag&os.O_APPEND != 0 {
		return 0, pathErr("write", f.name, errors.New("WriteAt on a file opened with O_APPEND"))
	}
	n, err := f.ef.WriteAt(p, off)
	return n, pathErr("write", f.name, err)
}

// Read reads from the current offset.
func (f *File) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.close {
		return 0, pathErr("read", f.name, ErrClosed)
	}
	if f.flag&os.O_WRONLY != 0 {
		return 0, pathErr("read", f.name, unix.EBADF)
	}
	n, err := f.ef.ReadAt(p, f.off)
	f.off += int64(n)
	if err == io.EOF {
		if n > 0 {
			err = nil
		}
		return n, err
	}
	return n, pathErr("read", f.name, err)
}

// Write writes at the current offset (at the end with O_APPEND).
func (f *File) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.close {
		return 0, pathErr("write", f.name, ErrClosed)
	}
	if f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return 0, pathErr("write", f.name, unix.EBADF)
	}
	if f.flag&os.O_APPEND != 0 {
		size, err := f.ef.Size()
		if err != nil {
			return 0, pathErr("write", f.name, err)
		}
		f.off = size
	}
	n, err := f.ef.WriteAt(p, f.off)
	f.off += int64(n)
	return n, pathErr("write", f.name, err)
}

// Seek sets the offset for the next Read or Write.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.close {
		return 0, pathErr("seek", f.name, ErrClosed)
	}
	base := int64(0)
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = f.off
	case io.SeekEnd:
		size, err := f.ef.Size()
		if err != nil {
			return 0, pathErr("seek", f.name, err)
		}
		base = size
	default:
		return 0, pathErr("seek", f.name, unix.EINVAL)
	}
	if base+offset < 0 {
		return 0, pathErr("seek", f.name, unix.EINVAL)
	}
	f.off = base + offset
	return f.off, nil
}

// Truncate changes the file's size.
func (f *File) Truncate(size int64) error {
	if err := f.check(true); err != nil {
		return pathErr("truncate", f.name, err)
	}
	return pathErr("truncate", f.name, f.ef.Truncate(size))
}

// Sync flushes the file to the backing storage.
func (f *File) Sync() error {
	if err := f.check(false); err != nil && !errors.Is(err, unix.EBADF) {
		return pathErr("sync", f.name, err)
	}
	return pathErr("sync", f.name, f.ef.Sync())
}

// Stat describes the open file.
func (f *File) Stat() (fs.FileInfo, error) {
	if err := f.check(false); err != nil && !errors.Is(err, unix.EBADF) {
		return nil, pathErr("stat", f.name, err)
	}
	st, err := f.ef.Stat()
	if err != nil {
		return nil, pathErr("stat", f.name, err)
	}
	size, err := f.ef.Size()
	if err != nil {
		return nil, pathErr("stat", f.name, err)
	}
	return &fileInfo{name: f.name, size: size, st: st}, nil
}

// Close releases the file; the engine file closes with its last user.
func (f *File) Close() error {
	f.mu.Lock()
	if f.close {
		f.mu.Unlock()
		return pathErr("close", f.name, ErrClosed)
	}
	f.close = true
	f.mu.Unlock()
	// A vault that was closed has closed the engine file already; Release
	// then does nothing.
	return pathErr("close", f.name, f.ef.Release())
}
