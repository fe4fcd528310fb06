package fileengine

import (
	"io"
	"io/fs"
	"os"
	"sync"
	"time"
)

// MemBacking is an in-memory Backing for this package's tests:
// it behaves like a regular file without an Fd, so punched holes are written
// as zeros. Its bytes can be read and replaced to simulate tampering and
// crashes. Safe for concurrent use.
type MemBacking struct {
	mu     sync.Mutex
	data   []byte
	reads  int
	writes int
}

// NewMemBacking returns an empty in-memory backing file.
func NewMemBacking() *MemBacking { return &MemBacking{} }

// NewMemBackingFrom returns an in-memory backing file holding a copy of b.
func NewMemBackingFrom(b []byte) *MemBacking {
	return &MemBacking{data: append([]byte(nil), b...)}
}

// Bytes returns a copy of the stored ciphertext.
func (m *MemBacking) Bytes() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]byte(nil), m.data...)
}

// SetBytes replaces the stored ciphertext with a copy of b (for tampering).
func (m *MemBacking) SetBytes(b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data = append(m.data[:0:0], b...)
}

// Counts returns how many ReadAt and WriteAt calls the backing has served,
// so tests can check that a request costs one backing I/O.
func (m *MemBacking) Counts() (reads, writes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads, m.writes
}

// ReadAt implements io.ReaderAt with os.File semantics (io.EOF when short).
func (m *MemBacking) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fs.ErrInvalid
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt implements io.WriterAt; writing past the end zero-fills the gap.
func (m *MemBacking) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fs.ErrInvalid
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	if end := off + int64(len(p)); end > int64(len(m.data)) {
		// Zero only the gap before off: the rest is overwritten right away.
		old := int64(len(m.data))
		m.grow(end)
		if off > old {
			clear(m.data[old:off])
		}
	}
	return copy(m.data[off:], p), nil
}

// Truncate sets the size, zero-filling when it grows.
func (m *MemBacking) Truncate(size int64) error {
	if size < 0 {
		return fs.ErrInvalid
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resize(size)
	return nil
}

// resize sets len(m.data) to size; new bytes are zero. Called with mu held.
func (m *MemBacking) resize(size int64) {
	old := int64(len(m.data))
	m.grow(size)
	if size > old {
		clear(m.data[old:])
	}
}

// grow sets len(m.data) to size, leaving new bytes unspecified. Called with mu held.
func (m *MemBacking) grow(size int64) {
	if size <= int64(cap(m.data)) {
		m.data = m.data[:size]
		return
	}
	grown := make([]byte, size, max(size, 2*int64(cap(m.data))))
	copy(grown, m.data)
	m.data = grown
}

// Stat reports the size; the other fields describe a plain 0600 file.
func (m *MemBacking) Stat() (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return memInfo{size: int64(len(m.data))}, nil
}

// SeekData is lseek SEEK_DATA on a file system without hole tracking:
// every byte is data, so it returns off, or io.EOF at or past the end.
func (m *MemBacking) SeekData(off int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 {
		return 0, fs.ErrInvalid
	}
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	return off, nil
}

// SeekHole is lseek SEEK_HOLE on a file system without hole tracking:
// the only hole is the end of the file.
func (m *MemBacking) SeekHole(off int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 || off >= int64(len(m.data)) {
		return 0, fs.ErrInvalid
	}
	return int64(len(m.data)), nil
}

// Sync does nothing: memory is always "durable" for a test.
func (m *MemBacking) Sync() error { return nil }

// memInfo is the os.FileInfo of a MemBacking.
type memInfo struct{ size int64 }

func (i memInfo) Name() string       { return "membacking" }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o600 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
