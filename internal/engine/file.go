package engine

import (
	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// The contents of an open file, through its one engine file
// (internal/fileengine: chunks, holes, roots, crash order).

// Key is the file's backing inode.
func (f *File) Key() FileKey { return f.key }

// Fd is the backing file's descriptor, for fstat and fchmod. The table
// owns it: it is closed after the last Release.
func (f *File) Fd() int { return f.fd }

// Stat is the backing file's stat (its Size is the ciphertext size).
func (f *File) Stat() (unix.Stat_t, error) { return backing.Fstat(f.fd) }

// ReadAt reads plaintext at off (io.EOF at the end).
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.file.ReadAt(p, off) }

// WriteAt writes plaintext at off, growing the file as needed.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.file.WriteAt(p, off)
	if n > 0 {
		f.changed()
	}
	return n, err
}

// Size is the plaintext size.
func (f *File) Size() (int64, error) { return f.file.Size() }

// Truncate sets the plaintext size.
func (f *File) Truncate(size int64) error {
	err := f.file.Truncate(size)
	f.changed()
	return err
}

// PunchHole makes [off, off+length) read as zeros, the size unchanged.
func (f *File) PunchHole(off, length int64) error {
	err := f.file.PunchHole(off, length)
	f.changed()
	return err
}

// ReserveSpace reserves the backing space of the chunks of the plaintext
// range [off, end), so that a later write there cannot fail for lack of
// space (where the backing file system overwrites in place).
func (f *File) ReserveSpace(off, end int64) error {
	suite := f.v.core.Suite()
	cs := int64(suite.ChunkSize())
	start := suite.CipherSize(off / cs * cs)
	return backing.ReserveSpace(f.fd, start, suite.CipherSize(end)-start)
}

// Sync flushes the file to the backing store.
func (f *File) Sync() error {
	f.changed()
	return f.file.Sync()
}

// Settle writes what the file owes its backing (with file roots: the
// clean header, the space reserved ahead given back).
func (f *File) Settle() error { return f.file.Settle() }

// Roots reports whether this file has file roots (a rebind may change
// it: prefer Vault.Roots where the vault's answer will do).
func (f *File) Roots() bool { return f.file.Roots() }

// Reload reads the header again (close-to-open with another writer of
// CIPHERDIR).
func (f *File) Reload() error { return f.file.Reload() }

// ID returns the file's ID, which binds its xattrs, and whether it has
// one (an empty file without a header has none).
func (f *File) ID() ([]byte, bool) {
	id, ok := f.file.ID()
	if !ok {
		return nil, false
	}
	return id[:], true
}

// EnsureID returns the file's ID, writing a header first if it has none.
func (f *File) EnsureID() ([]byte, error) {
	id, err := f.file.EnsureID()
	return id[:], err
}

// Release drops a reference; the last one closes the file (after Settle)
// and returns its error. Releasing a file the vault closed already does
// nothing.
func (f *File) Release() error { return f.v.files.Release(f.key, f) }

// Hold takes another reference on a file the caller already holds.
func (f *File) Hold() { f.v.files.Hold(f.key, f) }

// Sole reports whether the caller's reference is the only one.
func (f *File) Sole() bool { return f.v.files.Refs(f.key) == 1 }

// Bind records owner as the one the file serves, for LookupOwned: the
// mount binds a file to the node it was opened through, since an inode
// number can be reused by a new file while the kernel still holds a node
// for the old one. A later Bind replaces the owner.
func (f *File) Bind(owner any) { f.v.files.Bind(f.key, f, owner) }
