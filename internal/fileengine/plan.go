package fileengine

import "github.com/encryptfs/encryptfs/internal/crypto/content"

// layout is the chunk geometry of a vault: where plaintext chunks sit in the
// backing file. Pure arithmetic, shared by the write plan and the engine.
//
// The on-disk layout (v1: no tag blocks; file roots; compact roots) is
// chosen once, by newLayout, and is data, not branches: the per-chunk
// functions (cipherOffset, runEnd, cipherSize) read the tables below
// instead of asking which layout they are in, with no interface call in
// the read and write loops. The zero tables are the v1 layout.
type layout struct {
	chunk       int64 // plaintext bytes of a full chunk
	cipherChunk int64 // stored bytes of a full chunk
	overhead    int64 // cipherChunk - chunk
	maxSize     int64 // largest plaintext size whose backing offsets fit in an int64
	header      int64 // header size: content.HeaderSize (v1) or HeaderSizeV2 (bound)
	// tagged: a tag block (content.TagBlockSize) precedes every group of
	// content.TagEntries chunks (file roots, roots.go).
	tagged bool
	// compact: tag block 0 is stored in two pieces, after chunk 0 and
	// after chunk content.CompactHeadEntries-1, each only once the file
	// has a chunk after it (content.NewCompactRootsSuite).
	compact bool

	// tagBlock is the bytes of tag block before each group of
	// content.TagEntries chunks: 0 (v1) or content.TagBlockSize.
	tagBlock int64
	// group is the chunks of a group stored back to back: 0 (v1: one
	// run, group-1 is all ones) or content.TagEntries.
	group uint64
	// headTags is the tag bytes stored before each of the first
	// content.CompactHeadEntries chunks (in the compact layout, the
	// pieces of block 0 before them).
	headTags [content.CompactHeadEntries]int64
	// headEnd is, plus one, the last chunk of the run of chunk i among
	// the first content.CompactHeadEntries (0: no bound, v1).
	headEnd [content.CompactHeadEntries]uint64
	// short is the bytes of block 0 not stored in a file of n chunks,
	// n <= content.CompactHeadEntries (compact layout: its pieces).
	short [content.CompactHeadEntries + 1]int64

	// Tag block 0 as two pieces, entries [0, content.CompactHeadEntries)
	// and the rest (tagged layouts): where each starts, the last entry
	// of piece A, and the chunks a file needs for each to be stored.
	// FileRoots: one block after the header, always stored.
	pieceA, pieceB           int64
	pieceAEnd                uint64
	pieceANeeds, pieceBNeeds uint64

	// readGaps is the bytes between the chunks of one read (readEnd):
	// the pieces of tag block 0 in a compact layout, else 0.
	readGaps int64
}

// newLayout is the layout of a file format: v1 (neither tagged nor
// compact), file roots (tagged) or compact roots (both).
func newLayout(l layout, tagged, compact bool) layout {
	l.tagged, l.compact = tagged, compact
	if !tagged {
		return l
	}
	l.tagBlock, l.group = content.TagBlockSize, content.TagEntries
	l.pieceA, l.pieceB = l.header, l.header+content.CompactHeadEntries*content.TagSize
	l.pieceAEnd = content.TagEntries - 1
	for i := range l.headTags {
		l.headTags[i], l.headEnd[i] = content.TagBlockSize, content.TagEntries
	}
	if !compact {
		return l
	}
	const pieceA = content.CompactHeadEntries * content.TagSize
	for i := range l.headTags {
		l.headTags[i], l.headEnd[i] = pieceA, content.CompactHeadEntries
	}
	l.headTags[0], l.headEnd[0] = 0, 1
	l.pieceA = l.header + l.cipherChunk
	l.pieceB = l.header + content.CompactHeadEntries*(l.cipherChunk+content.TagSize)
	l.pieceAEnd = content.CompactHeadEntries - 1
	l.pieceANeeds, l.pieceBNeeds = 2, content.CompactHeadEntries+1
	for n := range l.short {
		l.short[n] = content.TagBlockSize - pieceA // piece B not stored
	}
	l.short[1] = content.TagBlockSize // nor piece A
	l.readGaps = content.TagBlockSize
	return l
}

// groupStart is where the bytes of group g (its tag block and chunks)
// start (tagged layouts only). Group 0 has the same size in both tagged
// layouts.
func (l layout) groupStart(g uint64) int64 {
	return l.header + int64(g)*(content.TagBlockSize+content.TagEntries*l.cipherChunk)
}

// tagBlockOffset is where tag block g starts (tagged layouts only; not
// block 0 of a compact layout, which is in pieces: entryOffset).
func (l layout) tagBlockOffset(g uint64) int64 { return l.groupStart(g) }

// entryOffset is where chunk i's tag entry is stored (tagged layouts).
func (l layout) entryOffset(i uint64) int64 {
	switch {
	case i < content.CompactHeadEntries:
		return l.pieceA + int64(i)*content.TagSize
	case i < content.TagEntries:
		return l.pieceB + int64(i-content.CompactHeadEntries)*content.TagSize
	}
	return l.tagBlockOffset(i/content.TagEntries) + int64(i%content.TagEntries)*content.TagSize
}

// entryRunEnd is the last entry stored back to back with entry i: the end
// of its tag block, or of its piece of a compact block 0.
func (l layout) entryRunEnd(i uint64) uint64 {
	if i < content.CompactHeadEntries {
		return l.pieceAEnd
	}
	return i | (content.TagEntries - 1)
}

// entryStored reports whether entry i has a place in a file of n chunks.
// Always in a FileRoots layout (its callers write only the blocks of
// groups that hold a chunk); in a compact one, the pieces of block 0
// exist only once the file has a chunk after them.
func (l layout) entryStored(i, n uint64) bool {
	switch {
	case i < content.CompactHeadEntries:
		return n >= l.pieceANeeds
	case i < content.TagEntries:
		return n >= l.pieceBNeeds
	}
	return true
}

// groupOf is the group whose bytes (tag block and chunks) hold backing
// offset off (tagged layouts only; an offset in the header is group 0).
func (l layout) groupOf(off int64) uint64 {
	if off < l.header {
		return 0
	}
	return uint64((off - l.header) / (content.TagBlockSize + content.TagEntries*l.cipherChunk))
}

// cipherOffset is where chunk i starts in the backing file. Only called for
// chunks of files of at most maxSize bytes, so it cannot overflow.
func (l layout) cipherOffset(i uint64) int64 {
	off := l.header + int64(i)*l.cipherChunk
	if i < content.CompactHeadEntries {
		return off + l.headTags[i]
	}
	return off + int64(i/content.TagEntries+1)*l.tagBlock
}

// runEnd bounds a run of chunks starting at i that is stored back to back:
// with tag blocks, a run ends at its group's last chunk, and in a compact
// layout also at chunk 0 and chunk content.CompactHeadEntries-1.
func (l layout) runEnd(i, last uint64) uint64 {
	if i < content.CompactHeadEntries {
		return min(last, l.headEnd[i]-1)
	}
	return min(last, i|(l.group-1))
}

// readEnd bounds a run of chunks starting at i that one backing read
// fetches: runEnd, except that in a compact layout the chunks of group 0
// are one run, read with the pieces of tag block 0 between them (at most
// readGaps bytes, not looked at), so a read across chunk 0 and 1 (or 15
// and 16) is one pread, as in the other layouts.
func (l layout) readEnd(i, last uint64) uint64 {
	if l.compact && i < content.TagEntries {
		return min(last, content.TagEntries-1)
	}
	return l.runEnd(i, last)
}

// cipherSize is the backing size of a file of size plaintext bytes.
func (l layout) cipherSize(size int64) int64 {
	if size == 0 {
		return 0
	}
	chunks := (size + l.chunk - 1) / l.chunk
	n := l.header + size + chunks*l.overhead
	n += (chunks + content.TagEntries - 1) / content.TagEntries * l.tagBlock
	if chunks <= content.CompactHeadEntries {
		n -= l.short[chunks]
	}
	return n
}

// plainLen is the plaintext length of chunk i in a file of the given size.
func (l layout) plainLen(i uint64, size int64) int64 {
	return min(l.chunk, size-int64(i)*l.chunk)
}

// writePlan is what one write request does to the stored chunks, computed
// before any I/O by planWrite; writeLocked carries it out. Chunk ranges are
// [from, to) unless named first/last.
type writePlan struct {
	first, last uint64 // chunks touched by the data (for none: the new last chunk)
	newLast     uint64 // last chunk of the file after the write

	// runStart..last are sealed and written in one run (per window). The
	// old last chunk is re-sealed with final=0 when the file grows past it
	// (resealOld); when holes separate it from the run it is written on its
	// own first (separate), else it is the run's first chunk.
	runStart  uint64
	oldLast   uint64
	resealOld bool
	separate  bool

	// The edge chunks the data does not cover whole: their new plaintext is
	// merged from the old plaintext, zero fill and the data.
	mergeFirst, mergeLast bool

	// growing: the file gets longer; a failure then undoes the write.
	// reserveFrom..reserveTo is the backing range reserved first: only
	// what the write stores past the backing file's end (reserving over
	// punched holes inside a file lost fresh chunks on ext4, commit d0e442b).
	growing                bool
	reserveFrom, reserveTo int64
	holesFrom, holesTo     uint64 // chunks the write leaves as holes
	setSparse              bool   // header gains SPARSE before the first hole exists
}

// planWrite plans writing n bytes at off into a file of oldSize bytes
// (hasHeader: it has a header; sparse: with SPARSE set), making it newSize
// bytes long. The caller guarantees off >= 0, n >= 0, newSize >= oldSize,
// newSize >= off+n, newSize > 0, and n == 0 only with off == newSize (a
// grow). It fails with ErrTooLarge when newSize exceeds the layout's
// maximum, before anything is written.
//
// SPARSE rule (docs/format.md §5.4): a write sets it only if it leaves
// holes, that is if it skips whole chunks past the old last chunk; a write
// into a file without holes, or one that leaves none, never sets it.
func planWrite(l layout, oldSize int64, hasHeader, sparse bool, off, n, newSize int64) (writePlan, error) {
	if newSize > l.maxSize {
		return writePlan{}, ErrTooLarge
	}
	var p writePlan
	if n > 0 {
		p.first, p.last = uint64(off/l.chunk), uint64((off+n-1)/l.chunk)
	} else {
		p.first = uint64((newSize - 1) / l.chunk)
		p.last = p.first
	}
	p.newLast = uint64((newSize - 1) / l.chunk)
	hasOld := oldSize > 0
	if hasOld {
		p.oldLast = uint64((oldSize - 1) / l.chunk)
	}
	p.growing = newSize > oldSize
	p.resealOld = hasOld && p.newLast > p.oldLast && p.oldLast < p.first
	p.runStart = p.first
	p.separate = p.resealOld && p.oldLast+1 < p.first
	if p.resealOld && !p.separate {
		p.runStart = p.oldLast
	}

	// Holes: whole chunks between the old end and the first chunk written.
	if hasOld {
		p.holesFrom = p.oldLast + 1
	}
	if p.first > p.holesFrom {
		p.holesTo = p.first
	} else {
		p.holesFrom, p.holesTo = 0, 0
	}
	p.setSparse = p.holesTo > p.holesFrom && !sparse && !l.tagged // roots: a hole is a zero tag entry

	direct := func(i uint64) bool {
		start := int64(i) * l.chunk
		return start >= off && start+l.plainLen(i, newSize) <= off+n
	}
	p.mergeFirst = !direct(p.first)
	p.mergeLast = p.last != p.first && !direct(p.last)

	if p.growing {
		from := l.cipherSize(oldSize)
		if !hasHeader {
			from = 0
		}
		at := l.cipherOffset(p.runStart)
		if l.tagged && p.runStart%content.TagEntries == 0 {
			at = l.tagBlockOffset(p.runStart / content.TagEntries) // a new group's tag block too
		}
		p.reserveFrom = max(from, at)
		p.reserveTo = l.cipherSize(newSize)
	}
	return p, nil
}

// written reports whether the plan seals chunk i.
func (p *writePlan) written(i uint64) bool {
	return (i >= p.runStart && i <= p.last) || (p.resealOld && i == p.oldLast)
}

// punchPlan is what PunchHole does to [off, end) of a file: the partial
// chunks at the edges are re-sealed as zeros through the write path, the
// whole chunks between become holes. The file's last chunk is never a hole
// (it keeps the size authenticated): it is re-sealed with zeros instead.
type punchPlan struct {
	headFrom, headTo int64  // plaintext range re-sealed as zeros before the holes
	holeFirst        uint64 // chunks [holeFirst, holeEnd) become holes
	holeEnd          uint64
	tailFrom, tailTo int64 // plaintext range re-sealed as zeros after the holes
}

// planPunch plans zeroing [off, end) (0 <= off < end <= size) of a file of
// size bytes.
func planPunch(l layout, size, off, end int64) punchPlan {
	holeFirst := uint64((off + l.chunk - 1) / l.chunk)
	holeEnd := uint64(end / l.chunk) // exclusive
	if fileLast := uint64((size - 1) / l.chunk); holeEnd > fileLast {
		holeEnd = fileLast
	}
	if holeFirst >= holeEnd {
		return punchPlan{headFrom: off, headTo: end}
	}
	return punchPlan{
		headFrom: off, headTo: int64(holeFirst) * l.chunk,
		holeFirst: holeFirst, holeEnd: holeEnd,
		tailFrom: int64(holeEnd) * l.chunk, tailTo: end,
	}
}
