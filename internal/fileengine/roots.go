package fileengine

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// File roots (format v2, docs/design/format-v2.md §5, docs/format.md §16):
// with a roots suite (content.NewRootsSuite), every chunk's AEAD tag is
// also stored in the tag block of its group, and the header holds the
// file's size, a generation and the root, an HMAC over size, gen and the
// tag blocks' hashes. So a file is authenticated as one version: a chunk
// from another version of the file (same index, same final flag: v1's AEAD
// accepts it) has another tag than its entry; a chunk replaced by a hole
// has a non-zero entry; a file cut short has another size than its header;
// a tag block from another version changes the root.
//
// The root is brought up to date at fsync and at the last close (Close),
// not per write. In between, the header carries DIRTY, set by the first
// write after a clean state with one header write (a plain pwrite, no
// fsync) before any chunk of the new version: in the same pwrite as the
// chunks when they start at chunk 0, right after the header (compact
// layout: withChunk0, newWithChunk0). Only an explicit fsync is a
// barrier (docs/format.md §16, "Durability"): it makes the data durable,
// then the clean header, so what was fsynced reads back verified as a
// whole. The implicit path (the DIRTY header, the clean header at close)
// pays no fsync: after a process crash the backing file system keeps
// every completed write in order, so DIRTY precedes every chunk it covers
// and the clean header follows them; after a power loss the order may be
// lost, and a file changed since its last fsync may read EIO as a whole
// (its root does not match) or DIRTY until fsck --repair re-roots it,
// which it does only when every chunk authenticates under v1's rules. A
// DIRTY file read by a File that did not write it (after a crash) reads
// with v1's guarantees: every chunk authenticated by file ID, index and
// final flag, and an all-zero non-final chunk read as a hole, as v1's
// SPARSE rule allows; fsck reports it, and fsck --repair or the next
// close after a write recomputes the tag blocks from the chunks and the
// root.
//
// A File keeps the tag table in memory sparse (tags.go): the tag blocks
// holding a non-zero entry, each with its SHA-256, 4 KiB per 256 chunks
// written (1/1024 of the data written at 16 KiB chunks, nothing for a hole
// or the space a truncate adds). It is loaded and checked against the root
// on the first read or write of a clean file: one 4 KiB read per group
// that holds data, the groups in holes of the backing file skipped
// (SEEK_DATA: a hole reads as zeros, so this is exactly a read of every
// block). A read costs one map lookup and one 16-byte comparison per chunk
// and no I/O beyond v1's; the root costs the hashing of the changed
// blocks and one 32-byte HMAC write per 256 tag blocks (content.RootSparse),
// bounded by the largest file (content.MaxRootsChunks).

// rootState is the roots bookkeeping of one File (nil without roots).
// Guarded by File.mu: changed only under the write lock.
type rootState struct {
	// loaded: the header's state was taken in (verified tag blocks for a
	// clean file; nothing to load for a DIRTY one).
	loaded bool
	// trusted: entries are the tags of the stored chunks (checked against
	// the root at load, or kept by this File's writes since). A File that
	// found its file DIRTY, or whose write failed part way, does not trust
	// them: it reads with v1's rules and rebuilds them from the chunks
	// before the next clean header.
	trusted bool
	// wrote: this File changed the file since its header was last clean;
	// fsync and Close then write a clean header.
	wrote bool
	// unrooted: opened by OpenUnrooted (fsck): the header's root is not
	// checked, the file reads with v1's rules, and RepairRoot re-roots it
	// even if its header is clean.
	unrooted bool

	tags tagTable // the entries: trusted, or to be rebuilt (rebuildEntries)
}

// fileRoots is the file-roots side of a File (docs/format.md §16): it
// owns the rule that a clean header's root commits to every chunk's tag
// entry, so a file is read against the root once its tag table is loaded,
// turns DIRTY before its first change, and is made clean again (finalize)
// by the File that changed it. It holds no state of its own: the state is
// File.rt, guarded by File.mu like the rest of the File.
type fileRoots struct{ f *File }

// Roots reports whether the engine's files have file roots
// (docs/format.md §16).
func (e *Engine) Roots() bool { return e.lay.tagged }

// chunksOf is the number of chunks of a file of size bytes.
func (e *Engine) chunksOf(size int64) uint64 {
	return uint64((size + int64(e.chunkSize) - 1) / int64(e.chunkSize))
}

// tagBlocksOf is the number of tag blocks of a file of size bytes.
func (e *Engine) tagBlocksOf(size int64) uint64 {
	return (e.chunksOf(size) + content.TagEntries - 1) / content.TagEntries
}

// root computes the root of the entries for a file of size bytes at gen
// under rule l, rehashing the stale blocks.
func (fr fileRoots) root(size int64, gen uint64, l content.Leaves) ([content.RootSize]byte, error) {
	f := fr.f
	count := f.e.tagBlocksOf(size)
	var buf [4]content.BlockHash // a file of up to 4 tag blocks (16 MiB at 16 KiB chunks): no allocation
	return f.e.suite.RootSparse(l, f.hdr.FileID, uint64(size), gen, count, f.rt.tags.hashes(buf[:0], count, l))
}

// newRootState is the state of a File just opened on header h (or of a
// new file when fresh), in an engine with roots (scheme.go: withRoots).
func (fr fileRoots) newRootState(fresh bool) {
	f := fr.f
	f.rt = &rootState{tags: tagTable{free: &f.e.tagBlocks}}
	if fresh {
		// A new header: DIRTY before a write (to be made clean by this
		// File), clean and empty otherwise.
		f.rt.loaded, f.rt.trusted = true, true
		f.rt.wrote = f.hdr.Flags&content.FlagDirty != 0
		return
	}
	if f.hdr.Flags&content.FlagDirty != 0 {
		f.rt.loaded = true // v1 rules: nothing to check against
	}
}

// checkHeaderSize is part of opening a clean file with roots: its header
// says how long it is, so a backing file cut (or grown) to a whole number
// of chunks, or to the header alone, which v1 reads as a shorter file, is
// caught here.
func (fr fileRoots) checkHeaderSize(cipherSize int64) error {
	f := fr.f
	if f.rt == nil || f.hdr.Flags&content.FlagDirty != 0 {
		return nil
	}
	want := max(f.e.lay.cipherSize(int64(f.hdr.Size)), f.e.lay.header)
	if f.hdr.Size != uint64(f.size) || cipherSize != want {
		return fmt.Errorf("core: header says %d bytes (%d stored), backing file holds %d bytes: %w", f.hdr.Size, want, cipherSize, content.ErrBadRoot)
	}
	return nil
}

// needRoots reports whether the tag blocks must be loaded before a read.
func (fr fileRoots) needRoots() bool { return fr.f.rt != nil && !fr.f.rt.loaded }

// loadRoots reads and checks the tag blocks of a clean file against its
// root, once per File. Called with mu held for writing.
func (fr fileRoots) loadRoots() error { return fr.loadRootsFrom(storedRun{}) }

// loadRootsFrom is loadRoots taking the stored tag bytes that run holds
// from it rather than from the backing file (firstRead).
func (fr fileRoots) loadRootsFrom(run storedRun) error {
	f := fr.f
	rs := f.rt
	if rs == nil || rs.loaded {
		return nil
	}
	e := f.e
	rs.tags.cut(0)
	buf := e.bufs.get(content.TagBlockSize)
	defer e.bufs.put(buf)
	block := (*buf)[:content.TagBlockSize]
	var only *[]byte // a file of one chunk: its plaintext, for the tail cache
	defer func() { e.bufs.put(only) }()
	err := fr.forDataGroups(0, e.tagBlocksOf(f.size), func(g uint64) error {
		if err := fr.readTagBlock(block, g, &only, run); err != nil {
			return fmt.Errorf("core: tag block %d: %w", g, err)
		}
		rs.tags.load(g, block)
		return nil
	})
	if err != nil {
		return err
	}
	if err := fr.checkRoot(); err != nil {
		return err
	}
	rs.loaded, rs.trusted = true, true
	if only != nil {
		// Authenticated by its AEAD and, through its entry, by the root
		// just checked: what the first read would have found, read again
		// and opened. So the read (or an append) that loaded the roots
		// costs one backing read of the chunk, not two.
		f.tail.set(*only)
	}
	return nil
}

// checkRoot checks the tag table just loaded against the header's root:
// by hashing, or for a small file this engine wrote or checked in this
// state by comparing the entries with the ones it remembers (rootMemo),
// which accepts and refuses what hashing would.
func (fr fileRoots) checkRoot() error {
	f := fr.f
	e, h := f.e, f.hdr
	n := e.chunksOf(f.size)
	if e.memo.matches(h.FileID, content.LeavesOf(h), uint64(f.size), h.Gen, h.Root, n, f.rt.tags.head(), f.rt.tags.headZeroFrom(n)) {
		return nil
	}
	root, err := fr.root(f.size, h.Gen, content.LeavesOf(h))
	if err != nil {
		return err
	}
	if err := content.CheckRoot(h.Root, root); err != nil {
		return fmt.Errorf("core: tag blocks: %w", err)
	}
	e.memo.remember(h.FileID, content.LeavesOf(h), uint64(f.size), h.Gen, h.Root, n, f.rt.tags.head())
	return nil
}

// readTagBlock reads the entries of tag block g into block
// (content.TagBlockSize bytes): the stored block, or for block 0 of a
// compact layout its stored pieces (zeros for the entries past them: the
// chunks they name do not exist), and for a file of one chunk entry 0
// from chunk 0 itself, whose AEAD tag it is: then, if the chunk opens,
// *only is set to its plaintext (a buffer of the engine's pools, for the
// tail cache once the root is checked). What run holds is taken from it.
// Called with mu held.
func (fr fileRoots) readTagBlock(block []byte, g uint64, only **[]byte, run storedRun) error {
	f := fr.f
	l := f.e.lay
	if !l.compact || g > 0 {
		return run.readAt(f.b, block, l.tagBlockOffset(g))
	}
	clear(block)
	n := f.e.chunksOf(f.size)
	if n == 1 {
		buf := f.e.bufs.get(f.e.cipherChunk)
		defer f.e.bufs.put(buf)
		stored := (*buf)[:f.e.plainLen(0, f.size)+f.e.overhead]
		if err := readFullAt(f.b, stored, l.cipherOffset(0)); err != nil {
			return err
		}
		copy(block, f.fc.ChunkTag(stored))
		plain := f.e.bufs.get(f.e.chunkSize)
		out, err := f.fc.Open((*plain)[:0], stored, 0, true)
		if err != nil {
			// The read that follows reads it again and reports it.
			f.e.bufs.put(plain)
			return nil
		}
		*plain = out
		*only = plain
		return nil
	}
	for i := uint64(0); i < content.TagEntries; i = l.entryRunEnd(i) + 1 {
		if !l.entryStored(i, n) {
			break
		}
		end := l.entryRunEnd(i) + 1
		if err := run.readAt(f.b, block[i*content.TagSize:end*content.TagSize], l.entryOffset(i)); err != nil {
			return err
		}
	}
	return nil
}

// firstRead loads the tag blocks before a read if needed, taking the
// write lock for it (ReadAt runs under the read lock). When the read's
// first backing read spans the stored pieces of tag block 0 (a compact
// file of 2 chunks or more read from chunk 0, as a whole-file read is),
// the roots are loaded from those bytes and the read is done here, under
// the write lock: one backing read instead of two (the pieces, then the
// chunks with the pieces between them). No chunk is opened before the
// root is checked. done reports that the read was done here (n, err),
// or failed (err); else the roots are loaded and ReadAt reads.
func (fr fileRoots) firstRead(p []byte, off int64) (n int, done bool, err error) {
	f := fr.f
	f.mu.RLock()
	need := fr.needRoots() && !f.closed
	f.mu.RUnlock()
	if !need {
		return 0, false, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, true, ErrClosed
	}
	if !fr.needRoots() {
		return 0, false, nil
	}
	if fr.readSpansPieceA(off, len(p)) {
		n, err := f.reads.readAt(p, off, fr.loadRootsFrom)
		return n, true, err
	}
	if err := fr.loadRoots(); err != nil {
		return 0, true, err
	}
	return 0, false, nil
}

// readSpansPieceA reports whether a read of n bytes at off reads chunks 0
// and 1 of a compact file of 2 chunks or more: then its first backing
// read (readLocked: one window, at least two chunks) holds piece A of tag
// block 0, which lies between them. Called with mu held.
func (fr fileRoots) readSpansPieceA(off int64, n int) bool {
	f := fr.f
	cs := int64(f.e.chunkSize)
	return f.e.lay.compact && !f.tail.ok && off < cs && min(off+int64(n), f.size) > cs
}

// storedRun is bytes of the backing file already read: buf holds
// [start, start+len(buf)). The zero storedRun holds nothing.
type storedRun struct {
	start int64
	buf   []byte
}

// readAt fills dst with the backing bytes at off: from the run if it
// holds all of them, else read from b.
func (r storedRun) readAt(b Backing, dst []byte, off int64) error {
	if off >= r.start && off+int64(len(dst)) <= r.start+int64(len(r.buf)) {
		copy(dst, r.buf[off-r.start:])
		return nil
	}
	return readFullAt(b, dst, off)
}

// markDirty is called before a change to a file with roots: it loads and
// checks the tag blocks of a clean file (a file whose root fails is not
// written to), and sets DIRTY in the header with one header write, unless
// the header is DIRTY already. Called with mu held for writing, after
// prepareHeader.
func (fr fileRoots) markDirty() error {
	_, err := fr.markDirtyWith(false)
	return err
}

// markDirtyWith is markDirty for a write whose first backing write
// starts at chunk 0 in a compact layout (withChunk0), which then carries
// the DIRTY header too, before the chunk: the header is returned, not
// written (the write stores it: headerStored, or dirtyAlone if it fails),
// one backing write fewer for an append to a file of one chunk.
func (fr fileRoots) markDirtyWith(withChunk0 bool) (*content.Header, error) {
	f := fr.f
	rs := f.rt
	if rs == nil {
		return nil, nil
	}
	if err := fr.loadRoots(); err != nil {
		return nil, err
	}
	rs.wrote = true
	if f.hdr.Flags&content.FlagDirty != 0 {
		return nil, nil
	}
	h := f.hdr
	h.Flags |= content.FlagDirty
	h.Gen++
	if withChunk0 {
		return &h, nil
	}
	// No fsync: the write is issued before any chunk of the new version,
	// which orders it for a process crash (the backing file system keeps
	// completed writes). A power loss may keep a chunk and lose this
	// header: the old clean header then fails the file as a whole
	// (ErrBadRoot, EIO) until fsck --repair re-roots it, never wrong
	// bytes; an fsync here cost every in-place edit of a clean file one
	// synchronous disk flush (0.04-0.06x, docs/format.md §16 "Cost").
	_, err := f.writeHeader(h)
	return nil, err
}

// withChunk0 reports whether the first backing write of write plan pl
// starts at chunk 0, right after the header (compact layout), in one
// window: then the DIRTY header the write needs (markDirtyWith) goes in
// it.
func (fr fileRoots) withChunk0(pl *writePlan) bool {
	f := fr.f
	return f.rt != nil && f.e.lay.compact && !pl.separate && pl.runStart == 0 &&
		pl.last < uint64(f.e.windowChunks)
}

// headerStored records that DIRTY header h, given to a write
// (newUnwritten, markDirtyWith), is on the backing file.
func (fr fileRoots) headerStored(h content.Header, held bool) {
	f := fr.f
	f.hdr = h
	if !held { // a held header is told when it is written (held.go)
		f.wroteHeader(h.FileID, h.Gen)
	}
}

// dirtyAlone writes the DIRTY header h that a failed write was to carry,
// on its own, so that the file is DIRTY whatever part of that write
// reached the backing file (as if markDirty had written it first).
func (fr fileRoots) dirtyAlone(h content.Header) {
	fr.f.writeHeader(h)
}

// newWithChunk0 reports whether the first write of a file without a
// header, by plan pl, stores the new header with chunk 0 (compact layout:
// chunk 0 follows the header): its first backing write starts at chunk
// 0, in one window (withChunk0). The header is then made in memory
// (newUnwritten), born DIRTY as any header before data, and written in
// that backing write, before the chunk: the order of a DIRTY header
// written first (a process crash keeps a write whole), one backing write
// fewer (a small file copied in: DIRTY header and chunk, then the clean
// header at the close, as format 1's header and chunk).
func (fr fileRoots) newWithChunk0(pl *writePlan) bool {
	f := fr.f
	return f.e.lay.compact && !f.hasHeader && !pl.separate && pl.runStart == 0 &&
		pl.last < uint64(f.e.windowChunks)
}

// newUnwritten gives a file without a header its new header (born DIRTY,
// as before any data: withRoots.fill) in memory only, for the write that
// follows to store (newWithChunk0). Called with mu held for writing.
func (fr fileRoots) newUnwritten() error {
	f := fr.f
	f.forData = true
	defer func() { f.forData = false }()
	h, fc, err := f.newHeader(false)
	if err != nil {
		return err
	}
	f.hdr, f.fc, f.hasHeader = h, fc, true
	f.e.roots.opened(f, true)
	return nil
}

// checkEntry applies the root to stored chunk i of a file whose entries
// are trusted: it reports hole if the entry is zero (the chunk is a hole:
// its stored bytes are not looked at) and an error if the chunk's tag is
// not its entry, or the last chunk is a hole.
func (fr fileRoots) checkEntry(stored []byte, i uint64, final bool) (hole bool, err error) {
	f := fr.f
	entry := f.rt.tags.entry(i)
	if isZero(entry) {
		if final {
			return false, fmt.Errorf("%w: last chunk %d is a hole", content.ErrBadRoot, i)
		}
		return true, nil
	}
	if len(stored) <= f.e.overhead || subtle.ConstantTimeCompare(f.fc.ChunkTag(stored), entry) != 1 {
		return false, fmt.Errorf("%w: chunk %d is not the one its tag block names", content.ErrBadRoot, i)
	}
	return false, nil
}

// isZero reports whether b is all zeros (an entry: a hole), which is
// not secret, so it may stop at the first non-zero byte. Compared with a
// block of zeros (bytes.Equal, in words): a byte loop over the 4 KiB tag
// block took 4% of the daemon's CPU in md5sum of small files. Tag
// blocks themselves are no longer scanned here: tagTable keeps a bound
// past which a block's entries are zero (tagBlock.top).
func isZero(b []byte) bool {
	for len(b) > len(zeroTagBlock) {
		if !bytes.Equal(b[:len(zeroTagBlock)], zeroTagBlock[:]) {
			return false
		}
		b = b[len(zeroTagBlock):]
	}
	return bytes.Equal(b, zeroTagBlock[:len(b)])
}

// zeroTagBlock is a tag block of zeros, for isZero. Read only.
var zeroTagBlock [content.TagBlockSize]byte

// setEntry records the tag of stored chunk i (sealed by this File).
func (fr fileRoots) setEntry(i uint64, stored []byte) {
	f := fr.f
	f.rt.tags.blockFor(i, i)
	f.rt.tags.set(i, f.fc.ChunkTag(stored))
}

// writeEntries writes the entries of chunks [first, last] (one group) of
// a file of size bytes to their tag block (zeros for a block not in the
// table); in a compact layout, only to the pieces of block 0 that the
// file has (layout.entryStored). A no-op without roots.
func (fr fileRoots) writeEntries(first, last uint64, size int64) error {
	f := fr.f
	rs := f.rt
	if rs == nil {
		return nil
	}
	l, n := f.e.lay, f.e.chunksOf(size)
	for i := first; i <= last; {
		end := min(last, l.entryRunEnd(i))
		if l.entryStored(i, n) {
			if err := writeFullAt(f.b, rs.tags.entries(i, end, f.e.zeroStore), l.entryOffset(i)); err != nil {
				return err
			}
		}
		i = end + 1
	}
	return nil
}

// saveEntries stores the entries that writes set and left unsaved
// (sealAndWrite: tagTable.markUnsaved), block by block in offset order,
// each block's unsaved range in one write per piece. Called before a
// clean header (finalize) and before the space reserved ahead is given
// back (settleLocked): the entries lie between chunks, inside that
// space. Entries past the file's last chunk are not written (a truncate
// cut them, with their chunks). Called with mu held for writing.
func (fr fileRoots) saveEntries() error {
	f := fr.f
	rs := f.rt
	if rs == nil || !rs.trusted {
		return nil // untrusted entries are rebuilt from the chunks (finalize)
	}
	n := f.e.chunksOf(f.size)
	var buf [4]uint64
	for _, g := range rs.tags.unsavedGroups(buf[:]) {
		b := rs.tags.blocks.get(g)
		first, last := g*content.TagEntries+uint64(b.lo), min(g*content.TagEntries+uint64(b.hi), n-1)
		if n > 0 && first <= last {
			if err := fr.writeEntries(first, last, f.size); err != nil {
				return err
			}
		}
		b.unsaved = false
	}
	return nil
}

// finalize writes a clean header for a file this File changed: the
// entries are rebuilt from the chunks if not trusted, then the header gets
// the new size, gen and root without DIRTY. With durable (fsync) the data
// (chunks and tag blocks) is made durable before the header and the
// header after it: what an fsync returned for reads back verified. Without
// (the last close) nothing is fsynced: the header write follows the data
// writes, which orders them for a process crash; after a power loss the
// file may fail as a whole (ErrBadRoot) until fsck --repair re-roots it
// (docs/format.md §16, "Durability"). Called with mu held for writing.
func (fr fileRoots) finalize(durable bool) error {
	f := fr.f
	rs := f.rt
	if rs == nil || !rs.wrote || !f.hasHeader {
		return nil
	}
	if err := fr.saveEntries(); err != nil {
		return err
	}
	if !rs.trusted {
		if err := fr.rebuildEntries(); err != nil {
			return err
		}
	}
	if durable {
		if err := f.b.Sync(); err != nil {
			return fmt.Errorf("core: sync: %w", err)
		}
	}
	h := f.hdr
	// The root of the new header follows the suite's rule, whatever rule
	// the old one followed (an upgraded vault's files move to trimmed
	// leaves at their next clean header), and says so in its flags.
	leaves := f.e.suite.NewLeaves()
	h.Flags = h.Flags&^(content.FlagDirty|content.FlagTrimmed) | leaves.Flag()
	h.Gen++
	h.Size = uint64(f.size)
	root, err := fr.root(f.size, h.Gen, leaves)
	if err != nil {
		return err
	}
	h.Root = root
	if f.held != nil {
		err = f.writeHeld(h) // the first write, clean (held.go)
	} else {
		_, err = f.writeHeader(h)
	}
	if err != nil {
		return err
	}
	f.e.memo.remember(h.FileID, leaves, h.Size, h.Gen, h.Root, f.e.chunksOf(f.size), rs.tags.head())
	rs.wrote, rs.unrooted = false, false
	if durable {
		if err := f.b.Sync(); err != nil {
			return fmt.Errorf("core: sync header: %w", err)
		}
	}
	return nil
}

// rebuildEntries recomputes every tag entry from the stored chunks, read
// with v1's rules (each authenticated by file ID, index and final flag; an
// all-zero non-final chunk is a hole), and writes the tag blocks. A chunk
// that fails stops it: the file stays DIRTY, its damage is fsck's to
// report. Groups that lie in a hole of the backing file are skipped
// (forDataGroups): their chunks and tag block read as zeros, that is
// holes and zero entries, which is what they are rebuilt to; the last
// group is always read (its last chunk is never a hole). Called with mu
// held for writing.
func (fr fileRoots) rebuildEntries() error {
	f := fr.f
	e := f.e
	rs := f.rt
	n := e.chunksOf(f.size)
	rs.tags.cut(0)
	if n == 0 {
		rs.trusted, rs.loaded = true, true
		return nil
	}
	last := n - 1
	win := uint64(e.windowChunks)
	buf := e.bufs.get(int(min(win, n)) * e.cipherChunk)
	defer e.bufs.put(buf)
	plain := e.bufs.get(e.chunkSize)
	defer e.bufs.put(plain)
	// Window by window (at most windowChunks, inside one group), so the
	// buffer stays small with 1 MiB chunks too.
	group := func(g uint64) error {
		gLast := min(last, g*content.TagEntries+content.TagEntries-1)
		for first := g * content.TagEntries; first <= gLast; {
			wLast := e.lay.runEnd(first, min(first+win-1, gLast))
			end := e.cipherOffset(wLast) + int64(e.plainLen(wLast, f.size)+e.overhead)
			stored := (*buf)[:end-e.cipherOffset(first)]
			if err := readFullAt(f.b, stored, e.cipherOffset(first)); err != nil {
				return &ChunkError{Index: first, Offset: int64(first) * int64(e.chunkSize), Err: err}
			}
			for i := first; i <= wLast; i++ {
				pos := int(i-first) * e.cipherChunk
				c := stored[pos : pos+e.plainLen(i, f.size)+e.overhead]
				if i != last && len(c) == e.cipherChunk && content.IsHole(c) {
					continue // a hole: zero entry
				}
				if _, err := f.fc.Open((*plain)[:0], c, i, i == last); err != nil {
					return &ChunkError{Index: i, Offset: int64(i) * int64(e.chunkSize), Err: err}
				}
				fr.setEntry(i, c)
			}
			// The entries of the window and, after the file's last chunk, the
			// zeros to the end of its block.
			to := wLast
			if wLast == last {
				to = last | (content.TagEntries - 1)
			}
			if err := fr.writeEntries(first, to, f.size); err != nil {
				return err
			}
			first = wLast + 1
		}
		return nil
	}
	lastGroup := last / content.TagEntries
	if err := fr.forDataGroups(0, lastGroup, group); err != nil {
		return err
	}
	if err := group(lastGroup); err != nil {
		return err
	}
	rs.trusted, rs.loaded = true, true
	return nil
}

// forDataGroups calls fn, in order, for the groups in [from, to) whose
// bytes (tag block and chunks) may hold data: with SEEK_DATA on the
// backing, the groups that lie wholly in a hole are skipped; they read as
// zeros. Without it, or once a seek fails, every group is data. So the
// cost follows the data stored, not the file's size.
func (fr fileRoots) forDataGroups(from, to uint64, fn func(g uint64) error) error {
	f := fr.f
	l := f.e.lay
	ds, seek := f.b.(dataSeeker)
	// One group: reading it (zeros if it is a hole) is what the seeks
	// would find, for one read instead of two lseeks and a read; so a
	// small file's roots cost no seek (format 2 paid two per open). A
	// file with as many bytes allocated as it is long is read whole too
	// (fullyAllocated).
	seek = seek && to-from > 1 && !fr.fullyAllocated()
	for g := from; g < to; {
		if !seek {
			if err := fn(g); err != nil {
				return err
			}
			g++
			continue
		}
		d, err := ds.SeekData(l.groupStart(g))
		if err == io.EOF {
			return nil // a hole to the end of the file
		}
		var h int64
		if err == nil {
			h, err = ds.SeekHole(d)
		}
		if err != nil || h <= d {
			seek = false
			continue
		}
		first, end := max(g, l.groupOf(d)), min(to, l.groupOf(h-1)+1)
		for ; first < end; first++ {
			if err := fn(first); err != nil {
				return err
			}
		}
		g = max(end, first)
	}
	return nil
}

// fullyAllocated reports whether the backing file has at least as many
// bytes allocated as its size, so that reading every group costs at most
// one tag-block read per group's worth of allocated bytes: the cost still
// follows the data stored, without the seeks. Those cost more than they
// save on such a file: on a tmpfs, SEEK_HOLE from the start of a data run
// walks the page cache of the whole run (about 10 ms for a 1000 MiB file,
// at the first read after every open; docs/performance.md, "A dense
// file's roots without seeks"). A hole such a file may still have (blocks
// allocated past its end, by a reservation or the file system's
// preallocation, can make up for it) reads as zeros, as forDataGroups
// allows. One fstat; false if the backing tells no blocks.
func (fr fileRoots) fullyAllocated() bool {
	fi, err := fr.f.b.Stat()
	if err != nil {
		return false
	}
	n, ok := backing.AllocatedBytes(fi)
	return ok && n >= fi.Size()
}

// RootDirty reports whether the file keeps a root and its header is
// DIRTY: written since its last clean close or fsync, or left so by a
// crash. fsck reports such a file (its chunks read with v1's guarantees).
func (f *File) RootDirty() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.rt != nil && f.hasHeader && f.hdr.Flags&content.FlagDirty != 0
}

// Reroot re-roots the file in b at place p as fsck --repair does: opened
// with OpenUnrooted (its root not trusted), then RepairRoot, then closed.
// b stays the caller's to close.
func (e *Engine) Reroot(b Backing, p Place) error {
	cf, err := e.OpenUnrooted(b, p)
	if err != nil {
		return err
	}
	err = cf.RepairRoot()
	if cerr := cf.Close(); err == nil {
		err = cerr
	}
	return err
}

// RepairRoot recomputes the tag blocks of a DIRTY file, or of a file
// opened with OpenUnrooted, from its chunks and writes a clean header
// (fsck --repair), durably. A chunk that fails authentication under v1's
// rules stops it (ChunkError) and the file is left as it was. A no-op
// without roots or for a clean file opened with OpenAt.
func (f *File) RepairRoot() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if f.rt == nil || !f.hasHeader || f.hdr.Flags&content.FlagDirty == 0 && !f.rt.unrooted {
		return nil
	}
	// A backing file that ends inside a tag block past its last whole
	// group (a power loss kept a new group's entry write, not its chunks)
	// reads with v1's rules as the groups before it: cut to them, so the
	// clean header's size is the stored one.
	want := max(f.e.lay.cipherSize(f.size), f.e.lay.header)
	if fi, err := f.b.Stat(); err != nil {
		return fmt.Errorf("core: stat backing file: %w", err)
	} else if fi.Size() > want {
		if err := f.b.Truncate(want); err != nil {
			return fmt.Errorf("core: cut a torn tag block: %w", err)
		}
	}
	f.rt.trusted, f.rt.wrote = false, true
	return f.rooted.finalize(true)
}

// OpenUnrooted is OpenAt for fsck: a clean header's root and size are not
// checked, and the file reads with v1's rules (every chunk authenticated
// by file ID, index and final flag; an all-zero non-final chunk is a
// hole), as a DIRTY file does. Its size is the backing file's. For a file
// whose root does not match (a power loss after a change not fsynced, or
// tampering): fsck reads it so to tell whether every chunk authenticates,
// and RepairRoot then re-roots it. Without roots it is OpenAt.
func (e *Engine) OpenUnrooted(b Backing, p Place) (*File, error) {
	f, err := e.openWith(b, p, true, true)
	if err != nil || f.rt == nil || !f.hasHeader {
		return f, err
	}
	f.rt.loaded, f.rt.trusted, f.rt.unrooted = true, false, true
	return f, nil
}

// VerifyRoot checks a clean file with roots as a whole: its tag blocks
// against the root, and every stored chunk's tag against its entry (the
// chunks are read, not decrypted). An error wrapping content.ErrBadRoot
// says the root does not match; nil for a DIRTY file, without roots, or
// for a file opened with OpenUnrooted.
func (f *File) VerifyRoot() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	rs := f.rt
	if rs == nil || !f.hasHeader || f.hdr.Flags&content.FlagDirty != 0 || rs.unrooted {
		return nil
	}
	if err := f.rooted.loadRoots(); err != nil {
		return err
	}
	e := f.e
	n := e.chunksOf(f.size)
	if n == 0 {
		return nil
	}
	buf := e.bufs.get(e.cipherChunk)
	defer e.bufs.put(buf)
	// Only the groups with a non-zero entry, and the last (its last chunk
	// is never a hole): every chunk of another group has a zero entry,
	// which checkEntry takes for a hole without reading the chunk.
	lastGroup := (n - 1) / content.TagEntries
	groups := f.rt.tags.groupsIn(0, lastGroup)
	if len(groups) == 0 || groups[len(groups)-1] != lastGroup {
		groups = append(groups, lastGroup)
	}
	for _, g := range groups {
		for i := g * content.TagEntries; i < min(n, (g+1)*content.TagEntries); i++ {
			stored := (*buf)[:e.plainLen(i, f.size)+e.overhead]
			if err := readFullAt(f.b, stored, e.cipherOffset(i)); err != nil {
				return &ChunkError{Index: i, Offset: int64(i) * int64(e.chunkSize), Err: err}
			}
			if _, err := f.rooted.checkEntry(stored, i, i == n-1); err != nil {
				return &ChunkError{Index: i, Offset: int64(i) * int64(e.chunkSize), Err: err}
			}
		}
	}
	return nil
}
