package fileengine

import (
	"crypto/sha256"
	"slices"
	"sync"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// tagTable is the tag entries of a file with roots, sparse: only the tag
// blocks that hold a non-zero entry (or did since their hash was last
// taken) are in memory, so a hole or the space a truncate adds costs
// nothing, and the table costs O(written data/1024) at 16 KiB chunks
// (4 KiB and a hash per 256 chunks written), not O(size). A block not in
// the table is all zeros (content.ZeroTagBlockHash). Changed only under
// the File's write lock; the parallel seal workers only fill entries of a
// block made beforehand (blockFor).
type tagTable struct {
	blocks blockMap
	// free is where blocks come from and go back to (the engine's
	// tagBlocks), so that a File opened per small file (tar -x, md5sum)
	// does not allocate and clear 4 KiB for its tag block each time;
	// nil: allocated. A block goes back when the table drops it, and
	// all of them at the File's Close (release): every use of a block's
	// memory (entry, entries, head) ends under the File's lock.
	free *sync.Pool
}

// tagBlock is one tag block in memory with its leaf (content.Leaves.Hash).
// tagTable.newBlock resets every field but entries when it reuses one.
type tagBlock struct {
	entries [content.TagBlockSize]byte
	hash    [sha256.Size]byte
	leaves  content.Leaves // the rule hash was taken with
	stale   bool           // entries changed since hash was taken
	// unsaved: entries [lo, hi] of the block were set by a write and
	// not yet stored (markUnsaved; fileRoots.saveEntries stores them
	// before a clean header).
	unsaved bool
	lo, hi  uint16
	// top bounds the entries that may be non-zero: those from top on
	// are zero. A new block starts at 0; blockFor raises it before
	// entries are set; load, which replaces every entry, sets it
	// exactly; clear and cut leave it, as a bound stays a bound. So
	// hashes scans for zeros only below it (content.Leaves.HashBounded):
	// a small file's block is one entry and 4,080 bytes of zeros.
	top uint16
}

// zeroEntry is the entry of a chunk whose block is not in the table. Read only.
var zeroEntry [content.TagSize]byte

// entry returns chunk i's tag entry; the caller must not change it.
func (t *tagTable) entry(i uint64) []byte {
	b := t.blocks.get(i / content.TagEntries)
	if b == nil {
		return zeroEntry[:]
	}
	at := i % content.TagEntries * content.TagSize
	return b.entries[at : at+content.TagSize]
}

// blockFor returns the block of chunks [first, last] (one block), made
// (all zeros) if missing, marks it stale and raises its bound past last:
// the caller is about to set those entries (set, by the seal workers in
// parallel, which therefore leave top alone).
func (t *tagTable) blockFor(first, last uint64) *tagBlock {
	g := first / content.TagEntries
	b := t.blocks.get(g)
	if b == nil {
		b = t.newBlock()
		clear(b.entries[:])
		t.blocks.put(g, b)
	}
	b.stale = true
	top := uint16(content.TagEntries) // a range past the block: the whole block
	if last/content.TagEntries == g {
		top = uint16(last%content.TagEntries + 1)
	}
	b.top = max(b.top, top)
	return b
}

// newBlock returns a block whose entries are arbitrary and whose other
// fields are zero.
func (t *tagTable) newBlock() *tagBlock {
	if t.free != nil {
		if b, ok := t.free.Get().(*tagBlock); ok {
			b.hash, b.leaves, b.stale, b.unsaved, b.lo, b.hi, b.top = [sha256.Size]byte{}, 0, false, false, 0, 0, 0
			return b
		}
	}
	return new(tagBlock)
}

// drop removes block g from the table and gives it back.
func (t *tagTable) drop(g uint64) {
	if b := t.blocks.get(g); b != nil && t.free != nil {
		t.free.Put(b)
	}
	t.blocks.del(g)
}

// release gives every block back: the File is closed.
func (t *tagTable) release() {
	for g := range t.blocks.all() {
		t.drop(g)
	}
}

// head returns tag block 0's entries: the table's own memory (not to be
// changed), or zeros for a block not in the table.
func (t *tagTable) head() []byte {
	if b := t.blocks.get(0); b != nil {
		return b.entries[:]
	}
	return zeroTagBlock[:]
}

// headZeroFrom reports whether the entries of block 0 from index n on
// are known to be zero (its bound): a block 0 just loaded has its exact
// bound, so for a stored block this is whether they are.
func (t *tagTable) headZeroFrom(n uint64) bool {
	b := t.blocks.get(0)
	return b == nil || uint64(b.top) <= n
}

// set makes chunk i's entry tag; blockFor made its block and bound.
func (t *tagTable) set(i uint64, tag []byte) {
	at := i % content.TagEntries * content.TagSize
	copy(t.blocks.get(i / content.TagEntries).entries[at:at+content.TagSize], tag)
}

// markUnsaved records that the entries of chunks [first, last] (one
// block, in the table) are newer in memory than on the backing file.
func (t *tagTable) markUnsaved(first, last uint64) {
	b := t.blocks.get(first / content.TagEntries)
	lo, hi := uint16(first%content.TagEntries), uint16(last%content.TagEntries)
	if !b.unsaved {
		b.unsaved, b.lo, b.hi = true, lo, hi
		return
	}
	b.lo, b.hi = min(b.lo, lo), max(b.hi, hi)
}

// The pieces of a compact tag block 0 a write stored whole (withPieces).
const (
	pieceA uint8 = 1 << iota // entries [0, content.CompactHeadEntries)
	pieceB                   // entries [content.CompactHeadEntries, content.TagEntries)
)

// savedPieces records that the pieces of block 0 were stored whole from
// the table: its unsaved entries are saved if they all lie in them.
func (t *tagTable) savedPieces(pieces uint8) {
	b := t.blocks.get(0)
	if pieces == 0 || b == nil || !b.unsaved {
		return
	}
	inA := b.hi < content.CompactHeadEntries && pieces&pieceA != 0
	inB := b.lo >= content.CompactHeadEntries && pieces&pieceB != 0
	if inA || inB || pieces == pieceA|pieceB {
		b.unsaved = false
	}
}

// unsavedGroups returns, sorted, the blocks with unsaved entries, in
// buf's memory when they fit (a small file's close allocates nothing).
func (t *tagTable) unsavedGroups(buf []uint64) []uint64 {
	gs := buf[:0]
	if t.blocks.len() == 0 {
		return gs
	}
	for g, b := range t.blocks.all() {
		if b.unsaved {
			gs = append(gs, g)
		}
	}
	if len(gs) > 1 {
		slices.Sort(gs)
	}
	return gs
}

// entries returns the stored bytes of the entries of chunks [first, last]
// (one block): the block's own memory, or zeros for a block not in the
// table.
func (t *tagTable) entries(first, last uint64, zeros []byte) []byte {
	b := t.blocks.get(first / content.TagEntries)
	n := (last - first + 1) * content.TagSize
	if b == nil {
		return zeros[:n]
	}
	at := first % content.TagEntries * content.TagSize
	return b.entries[at : at+n]
}

// load takes in stored tag block g (block): kept only if it has a
// non-zero entry.
func (t *tagTable) load(g uint64, block []byte) {
	n := content.TrimmedLen(block) // one scan: whether it is zero, and its bound
	if n == 0 {
		t.drop(g)
		return
	}
	b := t.blocks.get(g)
	if b == nil {
		b = t.newBlock()
		t.blocks.put(g, b)
	}
	copy(b.entries[:], block)
	b.stale = true
	b.top = uint16(n / content.TagSize)
}

// groupsIn returns, sorted, the blocks in the table from g0 to g1
// (inclusive): at most the table's size, whatever the range.
func (t *tagTable) groupsIn(g0, g1 uint64) []uint64 {
	var gs []uint64
	if g1-g0 < uint64(t.blocks.len()) { // a short range: look its blocks up
		for g := g0; g <= g1; g++ {
			if t.blocks.get(g) != nil {
				gs = append(gs, g)
			}
		}
		return gs
	}
	for g := range t.blocks.all() {
		if g >= g0 && g <= g1 {
			gs = append(gs, g)
		}
	}
	slices.Sort(gs)
	return gs
}

// clear zeroes the entries of chunks [first, end) and returns the blocks
// that held some of them (sorted): only those can differ from zeros on
// the backing file when the table is trusted.
func (t *tagTable) clear(first, end uint64) []uint64 {
	if end <= first {
		return nil
	}
	gs := t.groupsIn(first/content.TagEntries, (end-1)/content.TagEntries)
	for _, g := range gs {
		b := t.blocks.get(g)
		from := max(first, g*content.TagEntries) % content.TagEntries
		to := (min(end-1, g*content.TagEntries+content.TagEntries-1))%content.TagEntries + 1
		clear(b.entries[from*content.TagSize : to*content.TagSize])
		b.stale = true
	}
	return gs
}

// cut makes the entries of chunks n and above zero (holes past the end do
// not exist): the blocks past the last are dropped.
func (t *tagTable) cut(n uint64) {
	if n == 0 {
		t.release()
		return
	}
	blocks := (n + content.TagEntries - 1) / content.TagEntries
	for g := range t.blocks.all() {
		if g >= blocks {
			t.drop(g)
		}
	}
	if n%content.TagEntries != 0 {
		t.clear(n, blocks*content.TagEntries)
	}
}

// hashes rehashes under l the blocks below count that are stale or were
// hashed under the other rule (a file whose root is rewritten with
// trimmed leaves after it was checked with whole ones), drops the blocks
// found all zero, and appends the others' hashes to out, sorted, for
// content.RootSparse.
func (t *tagTable) hashes(out []content.BlockHash, count uint64, l content.Leaves) []content.BlockHash {
	for g, b := range t.blocks.all() {
		if g >= count {
			continue
		}
		if b.stale || b.leaves != l {
			h, zero := l.HashBounded(b.entries[:], int(b.top))
			if zero {
				t.drop(g)
				continue
			}
			b.hash, b.leaves, b.stale = h, l, false
		}
		out = append(out, content.BlockHash{Index: g, Hash: b.hash})
	}
	slices.SortFunc(out, func(a, b content.BlockHash) int {
		switch {
		case a.Index < b.Index:
			return -1
		case a.Index > b.Index:
			return 1
		}
		return 0
	})
	return out
}
