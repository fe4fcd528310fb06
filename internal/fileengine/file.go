package fileengine

import (
	"fmt"
	"io"
	"sync"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// File is one open encrypted file. All methods are safe for concurrent use:
// reads run in parallel; writes, truncates and hole punches are exclusive.
type File struct {
	e  *Engine
	b  Backing
	mu sync.RWMutex

	// All fields below are guarded by mu (written only under the write lock).
	size      int64 // plaintext size; cached because one File exists per inode
	hasHeader bool  // false for a 0-byte backing file
	hdr       content.Header
	fc        *content.FileCipher
	closed    bool
	// place is where the File was opened (OpenAt): a header written
	// later is bound to it (bound.go). Unused without binding.
	place Place
	// links is the file's links file when its header has FlagLinks
	// (links.go), nil otherwise.
	links *bind.LinkList

	tail tailCache

	// rt is the file-roots state (roots.go); nil without roots.
	rt *rootState
	// forData: prepareHeader is called by a write (prepareDataHeader): a
	// new header with roots is then born DIRTY rather than clean.
	forData bool

	// The sides of a File, each owning one rule (set once, by openWith).
	// Each holds a pointer back to this File for the state they share;
	// holes and space also hold the state only they use.
	reads  fileReads // opening stored chunks (read.go)
	rooted fileRoots // file roots and the tag table (roots.go)
	holes  fileHoles // SPARSE and the hole rule (holes.go)
	space  fileSpace // reserving and punching backing space (space.go)
	linked fileLinks // the links file (links.go)

	// held is a new file's first backing write while the write request
	// that made it runs (held.go): never set between two calls.
	held *[]byte

	// onHeader, if set (SetOnHeader), is told the file ID and gen of
	// each header written, under the write lock.
	onHeader func(id []byte, gen uint64)
}

// SetOnHeader makes f tell fn the file ID and gen of each header it
// writes from now on (freshness: what this device wrote), so that no one
// parses the written bytes for them. Set it before f is shared.
func (f *File) SetOnHeader(fn func(id []byte, gen uint64)) { f.onHeader = fn }

// wroteHeader tells onHeader of the header (id, gen), now on disk. It
// takes the fields by value: a pointer to the caller's header would move
// all of it to the heap, since id escapes to onHeader.
func (f *File) wroteHeader(id content.FileID, gen uint64) {
	if f.onHeader != nil {
		f.onHeader(id[:], gen)
	}
}

// Size returns the plaintext size.
func (f *File) Size() (int64, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return 0, ErrClosed
	}
	return f.size, nil
}

// ID returns the file ID and true, or false if the file has no header yet
// (a 0-byte backing file).
func (f *File) ID() (content.FileID, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.hdr.FileID, f.hasHeader
}

// EnsureID writes a header to a 0-byte file (so that xattrs can be bound to
// its ID) and returns the ID.
func (f *File) EnsureID() (content.FileID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return content.FileID{}, ErrClosed
	}
	if err := f.prepareHeader(false); err != nil {
		return content.FileID{}, err
	}
	return f.hdr.FileID, nil
}

// Sync flushes the backing file. With file roots, a file this File
// changed gets its clean header first (roots.go: finalize).
func (f *File) Sync() error { return f.e.roots.sync(f) }

// Close releases cached plaintext and pooled buffers. It does not close the backing.
// With file roots, a file this File changed gets its clean header first
// (roots.go: finalize); if that fails the file stays DIRTY, is closed all
// the same, and the error is returned.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	err := f.settleLocked()
	f.closed = true
	f.tail.drop()
	if f.rt != nil {
		f.rt.tags.release()
	}
	return err
}

// Reload forgets what the File knows of its backing file (size, header,
// the cached last chunk, roots state) and reads it again, for a mount
// that shares CIPHERDIR with other writers (the FUSE layer's
// SharedStorage): an open there must see what another machine wrote and
// closed, even when this mount still holds a File of the inode (FUSE's
// RELEASE of the last close arrives after close(2) has returned, so the
// next open can find the old File). What this File still owes its
// backing (Settle) is written first. On error the File is unchanged.
func (f *File) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if err := f.settleLocked(); err != nil {
		return err
	}
	nf, err := f.e.openWith(f.b, f.place, f.e.bind.bound(), false)
	if err != nil {
		return err
	}
	f.tail.drop()
	f.size, f.hasHeader, f.hdr, f.fc, f.links, f.rt = nf.size, nf.hasHeader, nf.hdr, nf.fc, nf.links, nf.rt
	f.space.reservedTo, f.holes.hole, f.holes.holeKnown, f.holes.dense, f.forData = 0, 0, false, 0, false
	return nil
}

// Roots reports whether the file has file roots (docs/format.md §16).
func (f *File) Roots() bool { return f.rt != nil }

// Settle does now what the last Close would do to the backing file: it
// gives back the space reserved ahead (space.go) and, with file roots,
// writes the clean header (roots.go: finalize). Both move the backing
// file's mtime, so a time the user sets explicitly must come after them:
// tar sets a file's times before it closes it, and FUSE's RELEASE, where
// Close runs, comes after that. The FUSE layer settles an open file
// before it sets times. A write after Settle makes the file DIRTY again,
// as any first write does.
func (f *File) Settle() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	return f.settleLocked()
}

// settleLocked is Settle with mu held for writing.
func (f *File) settleLocked() error {
	// The unsaved tag entries first: they lie inside the space reserved
	// ahead, and a write there cannot fail for want of space.
	saveErr := f.rooted.saveEntries()
	f.space.trimReserved()
	if saveErr != nil {
		return saveErr
	}
	return f.rooted.finalize(false)
}

// prepareHeader makes sure the file has a header, with SPARSE set if
// withHoles. A new header gets a fresh random file ID. Called with mu held
// for writing, before any chunk that needs it is written.
func (f *File) prepareHeader(withHoles bool) error {
	withHoles = f.e.roots.holeFlag(withHoles) // roots: a hole is a zero tag entry, no flag
	if f.hasHeader {
		if !withHoles || f.holes.sparse() {
			return nil
		}
		h := f.hdr
		h.Flags |= content.FlagSparse
		if _, err := f.writeHeader(h); err != nil {
			return err
		}
		// The flag must be durable before the first hole exists: after a
		// power loss the backing file system may keep the hole (a punch
		// or a truncate is metadata, journaled) and lose the 36-byte
		// header write, and the hole would then fail authentication in a
		// file whose only change was made of holes (found by
		// internal/crashsim's replay, "data": punch). One fsync when a
		// file first gets a hole; a new file's header needs none, since
		// nothing of the file is durable before it.
		return f.b.Sync()
	}
	h, fc, err := f.newHeader(withHoles)
	if err != nil {
		return err
	}
	if err := writeFullAt(f.b, f.e.suite.MarshalHeader(h), 0); err != nil {
		// A header written in part would leave a file too short or too
		// damaged to open ever again; the file was empty, so empty it is.
		f.b.Truncate(0)
		f.space.reservedTo = 0
		return err
	}
	f.hdr, f.fc, f.hasHeader = h, fc, true
	f.wroteHeader(h.FileID, h.Gen)
	f.e.roots.opened(f, true)
	return nil
}

// newHeader makes the header of a file that has none: a fresh random
// file ID, SPARSE if withHoles, bound to the File's place, with its file
// cipher. Nothing is written.
func (f *File) newHeader(withHoles bool) (content.Header, *content.FileCipher, error) {
	var h content.Header
	// Why safe: 128 random bits make a collision between two files' IDs (and
	// so their per-file keys) negligible for any realistic number of files.
	if _, err := io.ReadFull(f.e.rand, h.FileID[:]); err != nil {
		return h, nil, fmt.Errorf("core: random file ID: %w", err)
	}
	if withHoles {
		h.Flags = content.FlagSparse
	}
	h.Epoch = f.e.suite.Epoch() // a new file: the current master-key epoch
	if err := f.e.roots.fill(f, &h); err != nil {
		return h, nil, err
	}
	f.e.bind.stamp(&h, f.place)
	fc, err := f.e.suite.FileOf(h)
	if err != nil {
		return h, nil, fmt.Errorf("core: file key: %w", err)
	}
	return h, fc, nil
}

// prepareDataHeader is prepareHeader before a change of the contents.
func (f *File) prepareDataHeader(withHoles bool) error {
	f.forData = true
	defer func() { f.forData = false }()
	return f.prepareHeader(withHoles)
}

// writeHeader replaces the stored header of a file that has one with h.
// The header is the one part of a file whose damage loses all of it (no
// chunk opens without its file ID), and a header write can fail part way
// (a short write, EIO), so on failure the header in use is written back at
// once: kept reports that this worked, and the file is as before. If it
// did not, the file fails to open until repaired, and err says so.
func (f *File) writeHeader(h content.Header) (kept bool, err error) {
	if err := writeFullAt(f.b, f.e.suite.MarshalHeader(h), 0); err != nil {
		return writeFullAt(f.b, f.e.suite.MarshalHeader(f.hdr), 0) == nil, err
	}
	f.hdr = h
	f.wroteHeader(h.FileID, h.Gen)
	return false, nil
}

// tailCache caches the plaintext of a file's last chunk (len = size -
// lastIndex*chunkSize) while ok, so that appends re-seal the old last
// chunk without reading and opening it again. It owns one rule: it is
// dropped by anything that may leave the stored last chunk other than
// what it holds (a failed write, a cut, a reload, Close).
type tailCache struct {
	bufs      *bufPools // the engine's, where buf comes from and goes back
	chunkSize int
	buf       *[]byte
	ok        bool
}

// set records plain as the plaintext of the last chunk.
func (t *tailCache) set(plain []byte) {
	if t.buf == nil {
		t.buf = t.bufs.get(t.chunkSize)
	}
	*t.buf = append((*t.buf)[:0], plain...)
	t.ok = true
}

// drop forgets the cached last chunk and returns its buffer.
func (t *tailCache) drop() {
	t.bufs.put(t.buf)
	t.buf, t.ok = nil, false
}

// lastIndex is the index of the last chunk; only meaningful when size > 0.
func (f *File) lastIndex() uint64 {
	return uint64((f.size - 1) / int64(f.e.chunkSize))
}

// undoGrow puts a file back to its old size after a write that grew it
// failed part way (a full disk on a backing file that could not reserve,
// an I/O error): the backing file is cut to the old length and the old last
// chunk, which the write may have re-sealed with final=0 or half
// overwritten, is written again from the tail cache. So the file reads as
// before the failed request, as a failed write(2) promises, instead of
// ending in a chunk that fails authentication. Without the old plaintext
// (its read failed) or if the repair fails too, it falls back to
// afterFailedWrite.
// It reports whether the file is back at its old size.
func (f *File) undoGrow(oldSize int64, hadHeader bool) bool {
	if oldSize == 0 {
		keep := int64(0)
		if hadHeader {
			keep = f.e.lay.header // the file ID, which xattrs are bound to
		}
		f.space.reservedTo = 0
		if err := f.b.Truncate(keep); err != nil {
			f.afterFailedWrite()
			return false
		}
		f.size, f.hasHeader = 0, hadHeader
		f.tail.drop()
		return true
	}
	if !f.tail.ok || f.cutTo(oldSize, *f.tail.buf) != nil {
		f.afterFailedWrite()
		return false
	}
	return true
}

// restoreHeader writes back the header h a failed write had replaced (to
// set SPARSE), once the file is back at its old size, so that a failed
// write leaves the flag as it was. If that fails, writeHeader has put the
// SPARSE header back, the weaker but readable state (or the write's error,
// which the caller returns, stands for a damaged header too).
func (f *File) restoreHeader(h content.Header) {
	f.writeHeader(h)
}

// afterFailedWrite is called when a backing write failed part way: the tail
// cache may be stale and the size is re-derived from the backing file.
func (f *File) afterFailedWrite() {
	f.tail.drop()
	f.e.roots.distrust(f) // the tag entries may not match the chunks now
	if fi, err := f.b.Stat(); err == nil {
		if size, err := f.e.suite.PlainSize(fi.Size()); err == nil {
			f.size = size
		}
	}
}
