// Package core is the encrypted-file engine: random-access reads and writes
// of one encrypted file over a backing file, with read-modify-write of
// partial chunks, authenticated holes, and parallel chunk crypto for large
// requests. It knows nothing about FUSE: the mount, fsck and the offline
// tools all go through it.
package core

import (
	"io"
	"os"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// Backing is the ciphertext file under an encrypted file. *os.File satisfies it.
type Backing interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Sync() error
}

// ParallelOptions configures the bulk path.
type ParallelOptions struct {
	Enabled    bool // false: every request is sealed/opened on the caller's goroutine
	MaxWorkers int  // bound on concurrent crypto workers across all files; 0 = runtime.NumCPU()
	MinChunks  int  // requests of fewer chunks stay sequential; 0 = a tuned default
}

// Options configures an Engine.
type Options struct {
	// Rand supplies file IDs and chunk nonces; nil means crypto/rand.
	// Tests inject a deterministic reader to make golden ciphertexts.
	Rand     io.Reader
	Parallel ParallelOptions
}

// DefaultOptions returns parallel crypto on, NumCPU workers, crypto/rand.
func DefaultOptions() Options { panic("TODO") }

// Engine is shared by all files of a vault: the content suite, the worker
// pool and the buffer pools. Safe for concurrent use.
type Engine struct{ _ int }

// NewEngine builds an engine for a content suite.
func NewEngine(suite *content.Suite, opts Options) *Engine { panic("TODO") }

// Suite returns the engine's content suite.
func (e *Engine) Suite() *content.Suite { panic("TODO") }

// Open wraps a backing file. A non-empty backing file's header is read and
// verified now (content.ErrBadHeader, content.ErrTruncated). The caller keeps
// ownership of b and closes it after File.Close.
// At most one File may exist per backing inode at a time: it caches the size.
func (e *Engine) Open(b Backing) (*File, error) { panic("TODO") }

// File is one open encrypted file. All methods are safe for concurrent use:
// reads run in parallel; writes, truncates and hole punches are exclusive.
type File struct{ _ int }

// ReadAt reads plaintext like os.File.ReadAt (io.EOF at or past the end).
// A chunk that fails authentication yields an error wrapping
// content.ErrCorruptChunk and no bytes of that chunk.
func (f *File) ReadAt(p []byte, off int64) (int, error) { panic("TODO") }

// WriteAt writes plaintext like os.File.WriteAt, growing the file as needed;
// whole chunks skipped by a write past the end become holes.
func (f *File) WriteAt(p []byte, off int64) (int, error) { panic("TODO") }

// Truncate shrinks or grows the file; growing keeps the backing file sparse.
func (f *File) Truncate(size int64) error { panic("TODO") }

// PunchHole zeroes [off, off+length) without changing the size, deallocating
// whole chunks in the backing file where it can.
func (f *File) PunchHole(off, length int64) error { panic("TODO") }

// Size returns the plaintext size.
func (f *File) Size() (int64, error) { panic("TODO") }

// ID returns the file ID and true, or false if the file has no header yet
// (a 0-byte backing file).
func (f *File) ID() (content.FileID, bool) { panic("TODO") }

// EnsureID writes a header to a 0-byte file (so that xattrs can be bound to
// its ID) and returns the ID.
func (f *File) EnsureID() (content.FileID, error) { panic("TODO") }

// Sync flushes the backing file.
func (f *File) Sync() error { panic("TODO") }

// Close releases cached plaintext and pooled buffers. It does not close the backing.
func (f *File) Close() error { panic("TODO") }
