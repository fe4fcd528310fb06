// Package fileengine is the encrypted-file engine: random-access reads and writes
// of one encrypted file over a backing file, with read-modify-write of
// partial chunks, authenticated holes, and parallel chunk crypto for large
// requests. It knows nothing about FUSE: the mount, fsck and the offline
// tools all go through it.
//
// Crash behaviour. Every change is ordered so that an interrupted write
// leaves a file whose tail fails authentication (content.ErrCorruptChunk or
// content.ErrTruncated) rather than a file that silently reads shorter or
// longer:
//   - Appending rewrites the old last chunk (now final=0) and the new chunks in
//     one pwrite when they are contiguous (one per 1 MiB window for larger
//     requests, in increasing offset order). When holes separate them, the old
//     last chunk is rewritten first: a crash after that leaves a file whose
//     last stored chunk has final=0, which fails to open.
//   - Shrinking cuts the backing file first and writes the re-sealed new last
//     chunk (final=1) second: in between, the last stored chunk is either cut
//     short or sealed with final=0, and fails.
//   - A torn overwrite inside the file fails authentication at that chunk.
//   - The SPARSE header flag is written, and fsynced, before the first hole
//     exists, so a crash never leaves a hole that the header does not allow;
//     a write that fails puts the old header back. It is cleared again as
//     soon as the file has no hole left (see holes.go), after an fsync of
//     what filled or removed the last hole.
//   - PunchHole is several independent chunk rewrites (edges, holes, edges),
//     like a multi-block write on any file system: a crash can leave part of
//     the range zeroed, every chunk still authentic.
//
// This is the order in which the engine issues writes, which is what a crash
// of the process sees. After a power loss without Sync the backing file
// system may have reordered them, as for any application: then the file's
// chunks each read old or new, except in the range an interrupted resize
// (append, truncate, a write past the end) touched, which may fail
// authentication. The two SPARSE changes are ordered by an fsync, so holes
// never fail (docs/format.md, "Crash consistency"; internal/crashsim
// replays it).
//
// A failing backing (EIO, ENOSPC, EDQUOT, EINTR, short writes: see
// TestFaultInjection) is not a crash either: the request fails with the
// backing's error, chunks it did not write read as before, and a chunk it
// left half-written fails authentication, never reads as other bytes. The
// header is the one write whose damage would lose the whole file, so a
// header rewrite (SPARSE set or cleared) that fails puts the header in use
// back at once; only if that fails too is the file left unopenable, and
// the request then reports the error instead of a success.
//
// A full disk is not a crash: the engine is still running and must leave a
// readable file. A write that grows the file first reserves the backing
// space it stores past the file's end (fallocate KEEP_SIZE), so ENOSPC
// arrives before any byte changes (a file that keeps growing reserves in
// steps past its end, given back on Close: space.go). Where reserving is not possible, a
// growing write that fails part way is undone (cut back, old last chunk
// re-sealed from the tail cache): the file keeps its old size, and only
// bytes inside the failed request's range may already be new. Left open: a
// write into a hole inside a sparse file is not reserved (reserving over
// punched holes lost data on ext4, see planWrite), so a full disk in the
// middle of one can leave the chunk it tore failing authentication. Measured cost of the extra
// fallocate: about 2% on an untar of 38k files through the mount (three
// interleaved rounds, 10.89 s against 11.07 s median).
//
// Cost of the final flag: appending at a chunk boundary re-seals the old last
// chunk, so an append of k full chunks seals k+1 (128 KiB appends with 64 KiB
// chunks seal 3 chunks per 2 written; with 1 MiB appends, 17 per 16).
//
// Concurrency. A File has a sync.RWMutex: ReadAt runs concurrently with other
// reads; WriteAt, Truncate and PunchHole are exclusive, so two writes into the
// same chunk are serialised and neither's bytes are lost.
package fileengine

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
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
	// Binder, if set, turns on location binding (format v2, feature flag
	// "BoundLocations"; bound.go): the suite must be a bound one
	// (content.NewBoundSuite), and files are opened with OpenAt. nil: v1.
	Binder *bind.Binder
	// Links keeps the links files of files with more names than their
	// header can bind (links.go); nil: such a file fails to open
	// (bind.ErrBadLinks) and a link beyond the header is ErrTooManyLinks.
	Links LinkStore
}

// DefaultOptions returns parallel crypto on, NumCPU workers, crypto/rand.
func DefaultOptions() Options {
	return Options{Rand: rand.Reader, Parallel: ParallelOptions{Enabled: true}}
}

// minParallelBytes is the request size below which the crypto stays on the
// caller's goroutine: splitting costs a goroutine start and a wake-up, and
// the FUSE layer already runs concurrent requests on both cores. On the
// shared 2-core test machine, splitting 128 KiB requests (two 64 KiB chunks)
// was slower than not splitting in every paired run (BenchmarkPaired
// parwrite128k: 0.74-0.87); 1 MiB requests split. Re-tune on an idle machine
// with BenchmarkPaired and BenchmarkWorkers.
const minParallelBytes = 256 << 10

// Errors of the engine besides the content package's sentinels.
var (
	// ErrClosed is returned by every method of a File after Close.
	ErrClosed = errors.New("core: file is closed")
	// ErrInvalid is returned for negative offsets and sizes or sizes that overflow.
	ErrInvalid = errors.New("core: invalid offset or size")
	// ErrTooLarge is returned by a write or truncate that would make the
	// file larger than content.Suite.MaxPlainSize (backing offsets would
	// overflow an int64); the FUSE layer reports it as EFBIG.
	ErrTooLarge = errors.New("core: file would exceed the maximum file size")
)

// ChunkError says which chunk of a file failed, so that fsck and the mount
// can name the damaged region. Err is content.ErrCorruptChunk,
// content.ErrTruncated or a backing I/O error; errors.Is sees through it.
type ChunkError struct {
	Index  uint64 // chunk index in the file
	Offset int64  // plaintext offset of the chunk's first byte
	Err    error
}

// Error implements error.
func (e *ChunkError) Error() string {
	return fmt.Sprintf("core: chunk %d (plaintext offset %d): %v", e.Index, e.Offset, e.Err)
}

// Unwrap returns the underlying sentinel or I/O error.
func (e *ChunkError) Unwrap() error { return e.Err }

// Engine is shared by all files of a vault: the content suite, the worker
// pool and the buffer pools. Safe for concurrent use.
type Engine struct {
	suite       *content.Suite
	rand        io.Reader
	lay         layout
	chunkSize   int
	cipherChunk int
	overhead    int
	nonceSize   int

	parallel   bool
	maxWorkers int
	minChunks  int
	// windowChunks bounds the chunks handled per backing read or write:
	// at least 1 MiB (so every FUSE request is one I/O; 4 MiB on the bulk
	// path) and enough to give every worker two chunks.
	windowChunks int
	helpers      chan struct{} // semaphore: one token per running helper goroutine
	bind         binding       // location binding or none (binding.go)
	roots        rootScheme    // file roots or none (scheme.go)
	links        LinkStore     // links files (links.go); nil without binding

	memo      rootMemo // roots of small files already computed (rootmemo.go)
	bufs      bufPools
	tagBlocks sync.Pool // *tagBlock (tagTable.free)
	sealJobs  sync.Pool // *sealJob
	openJobs  sync.Pool // *openJob
	zeroPlain []byte    // ChunkSize zero bytes; read-only
	zeroStore []byte    // CipherChunkSize zero bytes; read-only
}

// NewEngine builds an engine for a content suite.
func NewEngine(suite *content.Suite, opts Options) *Engine {
	e := &Engine{
		suite:       suite,
		rand:        opts.Rand,
		chunkSize:   suite.ChunkSize(),
		cipherChunk: suite.CipherChunkSize(),
		overhead:    suite.Overhead(),
		nonceSize:   suite.NonceSize(),
		parallel:    opts.Parallel.Enabled,
		maxWorkers:  opts.Parallel.MaxWorkers,
		minChunks:   opts.Parallel.MinChunks,
		bind:        newBinding(opts.Binder),
		links:       opts.Links,
	}
	if e.bind.bound() != suite.Bound() {
		panic("core: a binder needs a bound suite and a bound suite a binder")
	}
	e.lay = newLayout(layout{chunk: int64(e.chunkSize), cipherChunk: int64(e.cipherChunk), overhead: int64(e.overhead), maxSize: suite.MaxPlainSize(), header: int64(suite.HeaderSize())}, suite.Roots(), suite.Compact())
	e.roots = newRootScheme(e.lay.tagged, e.lay.maxSize)
	if e.rand == nil {
		e.rand = rand.Reader
	}
	if e.maxWorkers <= 0 {
		e.maxWorkers = runtime.NumCPU()
	}
	if e.minChunks <= 0 {
		e.minChunks = max(2, minParallelBytes/e.chunkSize)
	}
	windowBytes := 1 << 20
	if e.parallel {
		// Each window starts its helper goroutines anew, which costs tens
		// of microseconds on a VM; 4 MiB windows keep that small against
		// the sealing (parallel/sequential for a 10 MiB write on 2 cores,
		// medians: 1.37x with 1 MiB windows, 1.45x once the backing writes
		// were pipelined, 1.66x with 4 MiB windows; reads 1.36x, 1.48x,
		// 1.59x).
		windowBytes = 4 << 20
	}
	e.windowChunks = max(windowBytes/e.chunkSize, 2*e.maxWorkers)
	e.helpers = make(chan struct{}, max(e.maxWorkers-1, 0))
	e.sealJobs.New = func() any { return new(sealJob) }
	e.openJobs.New = func() any { return new(openJob) }
	e.zeroPlain = make([]byte, e.chunkSize)
	e.zeroStore = make([]byte, e.cipherChunk)
	return e
}

// Suite returns the engine's content suite.
func (e *Engine) Suite() *content.Suite { return e.suite }

// cipherOffset is where chunk i starts in the backing file.
func (e *Engine) cipherOffset(i uint64) int64 { return e.lay.cipherOffset(i) }

// plainLen is the plaintext length of chunk i in a file of the given size.
func (e *Engine) plainLen(i uint64, size int64) int {
	return int(min(int64(e.chunkSize), size-int64(i)*int64(e.chunkSize)))
}

// Open wraps a backing file. A non-empty backing file's header is read and
// verified now (content.ErrBadHeader, content.ErrTruncated). The caller keeps
// ownership of b and closes it after File.Close.
// At most one File may exist per backing inode at a time: it caches the size.
func (e *Engine) Open(b Backing) (*File, error) {
	return e.open(b, Place{}, false)
}

// open is Open and, with at, OpenAt.
func (e *Engine) open(b Backing, p Place, at bool) (*File, error) {
	return e.openWith(b, p, at, false)
}

// openWith is open; unrooted skips the check of a clean header's size
// (OpenUnrooted).
func (e *Engine) openWith(b Backing, p Place, at, unrooted bool) (*File, error) {
	if err := e.bind.opening(at); err != nil {
		return nil, err
	}
	fi, err := b.Stat()
	if err != nil {
		return nil, fmt.Errorf("core: stat backing file: %w", err)
	}
	cipherSize := fi.Size()
	size, err := e.suite.PlainSize(cipherSize)
	if err != nil {
		return nil, fmt.Errorf("core: backing file of %d bytes: %w", cipherSize, err)
	}
	if err := e.roots.admitSize(cipherSize, size); err != nil {
		return nil, err
	}
	f := &File{e: e, b: withFdSpace(b), size: size, place: p, tail: tailCache{bufs: &e.bufs, chunkSize: e.chunkSize}}
	f.reads, f.rooted, f.holes, f.space, f.linked = fileReads{f}, fileRoots{f}, fileHoles{f: f}, fileSpace{f: f}, fileLinks{f}
	if cipherSize == 0 {
		return f, nil
	}
	raw := make([]byte, e.lay.header)
	if err := readFullAt(b, raw, 0); err != nil {
		return nil, fmt.Errorf("core: reading header: %w", err)
	}
	h, err := e.suite.ParseHeader(raw)
	if err != nil {
		return nil, fmt.Errorf("core: %w", err)
	}
	if f.links, err = e.bind.admit(e, &h, p); err != nil {
		return nil, err
	}
	fc, err := e.suite.FileOf(h) // the key of the header's epoch
	if err != nil {
		return nil, fmt.Errorf("core: file key: %w", err)
	}
	f.hdr, f.fc, f.hasHeader = h, fc, true
	e.roots.opened(f, false)
	if unrooted {
		return f, nil
	}
	if err := f.rooted.checkHeaderSize(cipherSize); err != nil {
		return nil, err
	}
	return f, nil
}

// readFullAt reads exactly len(p) bytes at off; a short read means the
// backing file is shorter than its cached size says (content.ErrTruncated).
func readFullAt(b Backing, p []byte, off int64) error {
	n, err := b.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("short read of %d/%d bytes at backing offset %d: %w", n, len(p), off, content.ErrTruncated)
	}
	return fmt.Errorf("read at backing offset %d: %w", off, err)
}

// writeFullAt writes all of p at off.
func writeFullAt(b Backing, p []byte, off int64) error {
	n, err := b.WriteAt(p, off)
	if err != nil {
		return fmt.Errorf("core: write at backing offset %d: %w", off, err)
	}
	if n != len(p) {
		return fmt.Errorf("core: write at backing offset %d: %w", off, io.ErrShortWrite)
	}
	return nil
}
