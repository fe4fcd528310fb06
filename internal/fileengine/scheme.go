package fileengine

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// rootScheme is the engine's file-roots strategy (roots.go,
// docs/format.md §16), chosen once in NewEngine from the suite: noRoots
// (a v1 header, chunks authenticated one by one) or withRoots (a root
// over the tag entries in a header that says how long the file is). The
// open, header and sync paths call it instead of asking whether the
// engine has roots; none of its methods is on a per-chunk path.
type rootScheme interface {
	// admitSize refuses, at open, a backing file of cipherSize bytes
	// holding size bytes that is too long for the scheme.
	admitSize(cipherSize, size int64) error
	// opened sets up the root state of a File on its header, just read
	// or (fresh) just written.
	opened(f *File, fresh bool)
	// holeFlag is whether a header is to get FlagSparse for holes
	// (withHoles): with roots a hole is a zero tag entry, no flag.
	holeFlag(withHoles bool) bool
	// fill completes a new header h (its file ID and epoch set) before
	// it is written.
	fill(f *File, h *content.Header) error
	// sync is File.Sync.
	sync(f *File) error
	// distrust marks f's tag entries as possibly out of step with its
	// chunks (after a failed write): rebuilt before the clean header.
	distrust(f *File)
	// emptied drops f's tag entries once f is truncated to its header.
	emptied(f *File)
	// punch turns f's stored chunks [first, end) into holes.
	punch(fs *fileSpace, first, end uint64) error
}

// newRootScheme is the scheme of a suite with (roots) or without roots.
func newRootScheme(roots bool, maxSize int64) rootScheme {
	if roots {
		return withRoots{maxSize}
	}
	return noRoots{}
}

// noRoots: v1 headers, no root state.
type noRoots struct{}

func (noRoots) admitSize(int64, int64) error      { return nil }
func (noRoots) opened(*File, bool)                {}
func (noRoots) holeFlag(withHoles bool) bool      { return withHoles }
func (noRoots) fill(*File, *content.Header) error { return nil }

func (noRoots) distrust(*File) {}
func (noRoots) emptied(*File)  {}

func (noRoots) punch(fs *fileSpace, first, end uint64) error { return fs.punchRun(first, end) }

// sync needs only the read lock: nothing of the File changes.
func (noRoots) sync(f *File) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return ErrClosed
	}
	if err := f.b.Sync(); err != nil {
		return fmt.Errorf("core: sync: %w", err)
	}
	return nil
}

// withRoots: file roots (roots.go).
type withRoots struct {
	maxSize int64 // content.MaxRootsChunks chunks: layout.maxSize
}

// admitSize: past content.MaxRootsChunks the root's cost is unbounded: a
// backing file (hostile input) that long is refused, not hashed.
func (w withRoots) admitSize(cipherSize, size int64) error {
	if size > w.maxSize {
		return fmt.Errorf("core: backing file of %d bytes holds %d bytes: %w", cipherSize, size, ErrTooLarge)
	}
	return nil
}

func (withRoots) opened(f *File, fresh bool) { f.rooted.newRootState(fresh) }

func (withRoots) holeFlag(bool) bool { return false }

// fill: before a write, born DIRTY: the clean header comes at fsync or
// the last close (finalize), after the data. Otherwise (a header for
// xattrs or a binding) born clean, as the empty file it is, so that the
// close makes no header write (no mtime change after a rename or a
// setxattr).
func (withRoots) fill(f *File, h *content.Header) error {
	h.Gen = 1
	if f.forData {
		h.Flags = content.FlagDirty
		return nil
	}
	leaves := f.e.suite.NewLeaves()
	h.Flags |= leaves.Flag()
	root, err := f.e.suite.Root(leaves, h.FileID, 0, h.Gen, nil)
	if err != nil {
		return fmt.Errorf("core: file root: %w", err)
	}
	h.Root = root
	return nil
}

// sync takes the write lock: a file this File changed gets its clean
// header first (finalize).
func (withRoots) sync(f *File) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if f.rt != nil && f.rt.wrote {
		return f.rooted.finalize(true)
	}
	if err := f.b.Sync(); err != nil {
		return fmt.Errorf("core: sync: %w", err)
	}
	return nil
}

func (withRoots) distrust(f *File) {
	if f.rt != nil {
		f.rt.trusted = false
	}
}

func (withRoots) emptied(f *File) {
	if f.rt != nil {
		f.rt.tags.cut(0)
	}
}

// punch: a hole is a zero tag entry (punchTagged); a file without a
// header has no root state and no stored chunk to punch.
func (withRoots) punch(fs *fileSpace, first, end uint64) error {
	if fs.f.rt != nil {
		return fs.punchTagged(first, end)
	}
	return fs.punchRun(first, end)
}
