package vault

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"golang.org/x/sys/unix"
)

// openInode is the vault's state of an open backing inode, one per inode
// in the engine's open-file table (core.Table), shared by every File open
// on it: the engine caches the size and last chunk, so two engine files on
// one inode would disagree.
type openInode struct {
	backing *backing.ObservedFile
	cf      *core.File
}

// File is an open plaintext file of a vault, like *os.File: ReadAt and
// WriteAt may run concurrently; Read, Write and Seek share an offset.
type File struct {
	v     *Vault
	name  string
	key   core.FileKey
	oi    *openInode
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

func (v *Vault) openFile(name string, flag int, perm fs.FileMode) (*File, error) {
	ref, err := v.resolve(name)
	if err != nil {
		return nil, err
	}
	defer ref.parent.release()
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if writable || flag&os.O_TRUNC != 0 {
		if err := ref.name.ReadOnly(); err != nil {
			return nil, err
		}
	}
	writableFD := true
	fd := -1
	if flag&os.O_CREATE != 0 {
		fd, err = v.tree.Create(ref.parent.fd, ref.name, 0, uint32(perm.Perm()))
		if err == nil {
			v.fs.Fsync(ref.parent.fd)
		} else if !errors.Is(err, unix.EEXIST) || flag&os.O_EXCL != 0 {
			return nil, err
		}
	}
	if fd < 0 {
		// The engine reads back partial chunks, so even a write-only
		// file is opened read-write underneath.
		// Readers try read-write too, so that a later writer can share
		// the engine file.
		// OpenRegular does not block on a FIFO planted in CIPHERDIR.
		fd, _, err = backing.OpenRegular(ref.parent.fd, ref.name.Backing, unix.O_RDWR)
		if err != nil && !writable && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EROFS)) {
			fd, _, err = backing.OpenRegular(ref.parent.fd, ref.name.Backing, unix.O_RDONLY)
			writableFD = false
		}
		if err != nil {
			return nil, err
		}
	}
	st, err := backing.Fstat(fd)
	if err != nil {
		backing.Close(fd)
		return nil, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		backing.Close(fd)
		return nil, unix.EISDIR
	default:
		backing.Close(fd)
		return nil, unix.EINVAL
	}
	key := core.FileKey{Dev: st.Dev, Ino: st.Ino}
	place := v.tree.Place(ref.parent.id, ref.name)
	oi, err := v.attach(key, fd, place, writable, writableFD)
	if errors.Is(err, bind.ErrMisplaced) {
		oi, err = v.reattach(ref, key, place, writable, err)
	}
	if err != nil {
		return nil, err
	}
	f := &File{v: v, name: name, key: key, oi: oi, flag: flag}
	if flag&os.O_TRUNC != 0 && writable {
		if err := oi.cf.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// attach shares the inode's engine file or creates it from fd. It owns fd.
// writableFD says whether fd itself is read-write. A writer cannot share an
// engine file that sits on a read-only fd (it would have to reopen it under
// the readers): that open fails with ETXTBSY.
// place is where the file was found, which a vault with location binding
// checks its header against (core.Table.AcquireAt).
func (v *Vault) attach(key core.FileKey, fd int, place core.Place, writable, writableFD bool) (*openInode, error) {
	bf := v.fs.NewFile(fd, nil)
	oi, err := v.files.AcquireAt(key, bf, place, writableFD, writable, func(cf *core.File) *openInode {
		return &openInode{backing: bf, cf: cf}
	})
	if errors.Is(err, core.ErrClosed) {
		return nil, ErrClosed
	}
	return oi, err // core.ErrBusy: pathErr gives it ETXTBSY (fault.Busy)
}

// reattach handles an open whose file was not bound to the name it was
// opened by (err, bind.ErrMisplaced). With location binding a rename drops
// the old name's binding once it is done, so an open that resolved the
// name just before a rename moved the file away finds it bound elsewhere:
// the rename won the race, and the open fails as if the name were gone
// (ENOENT), as it does in v1 once the name is gone. If the name still
// holds the file (renamed away and back, the binding added again), the
// open is tried once more. Only a file found, twice, at a name it is not
// bound to is misplaced (EIO).
func (v *Vault) reattach(ref entryRef, key core.FileKey, place core.Place, writable bool, err error) (*openInode, error) {
	st, serr := backing.Fstatat(ref.parent.fd, ref.name.Backing)
	if serr != nil || st.Ino != key.Ino || uint64(st.Dev) != key.Dev {
		return nil, unix.ENOENT
	}
	fd, _, oerr := backing.OpenRegular(ref.parent.fd, ref.name.Backing, unix.O_RDWR)
	writableFD := oerr == nil
	if oerr != nil && !writable {
		fd, _, oerr = backing.OpenRegular(ref.parent.fd, ref.name.Backing, unix.O_RDONLY)
	}
	if oerr != nil {
		return nil, err
	}
	if fst, ferr := backing.Fstat(fd); ferr != nil || fst.Ino != key.Ino {
		backing.Close(fd)
		return nil, unix.ENOENT
	}
	return v.attach(key, fd, place, writable, writableFD)
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
	n, err := f.oi.cf.ReadAt(p, off)
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
	n, err := f.oi.cf.WriteAt(p, off)
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
	n, err := f.oi.cf.ReadAt(p, f.off)
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
		size, err := f.oi.cf.Size()
		if err != nil {
			return 0, pathErr("write", f.name, err)
		}
		f.off = size
	}
	n, err := f.oi.cf.WriteAt(p, f.off)
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
		size, err := f.oi.cf.Size()
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
	return pathErr("truncate", f.name, f.oi.cf.Truncate(size))
}

// Sync flushes the file to the backing storage.
func (f *File) Sync() error {
	if err := f.check(false); err != nil && !errors.Is(err, unix.EBADF) {
		return pathErr("sync", f.name, err)
	}
	return pathErr("sync", f.name, f.oi.cf.Sync())
}

// Stat describes the open file.
func (f *File) Stat() (fs.FileInfo, error) {
	if err := f.check(false); err != nil && !errors.Is(err, unix.EBADF) {
		return nil, pathErr("stat", f.name, err)
	}
	st, err := backing.Fstat(int(f.oi.backing.Fd()))
	if err != nil {
		return nil, pathErr("stat", f.name, err)
	}
	size, err := f.oi.cf.Size()
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
	return pathErr("close", f.name, f.v.files.Release(f.key, f.oi))
}
