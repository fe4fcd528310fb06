package content

import "fmt"

// Compact roots (feature flag "CompactRoots", docs/format.md §16
// "Compact layout", design/format-v2.md §5): the layout of FileRoots
// with tag block 0 stored in two pieces after chunk 0 and after chunk
// CompactHeadEntries-1, and only once the file has chunks past them.
// Group 0 keeps its size, so chunks CompactHeadEntries and up, and every
// later group, sit where FileRoots puts them:
//
//	chunk 0                       at header
//	piece A (entries 0..15)       at header + CipherChunkSize            (file of 2+ chunks)
//	chunks 1..15                  at header + 256 + i*CipherChunkSize
//	piece B (entries 16..255)     at header + 256 + 16*CipherChunkSize   (file of 17+ chunks)
//	chunks 16..                   as FileRoots: header + i*CipherChunkSize + (i/256+1)*TagBlockSize
//
// A file of one chunk stores no entry: entry 0 is chunk 0's own AEAD
// tag. The root is unchanged: tag block 0 is, for its hash, the 4096
// bytes of its 256 entries whatever is stored (entries of pieces not
// stored are zero: the chunks they name do not exist). Why two pieces:
// a file of 2..16 chunks pays 256 bytes of entries instead of 4096, one
// of 17..256 chunks (at least 16 full chunks) pays 4096, under 1/64 of
// its size at the smallest chunk; a single piece after chunk 0 made a
// tree of headers 1.07x format 1, these two 1.01x (docs/format.md §16).
const (
	// CompactHeadEntries is the number of entries of piece A.
	CompactHeadEntries = 16
	// compactHeadSize is the stored size of piece A.
	compactHeadSize = CompactHeadEntries * TagSize
)

// NewCompactRootsSuite is NewRootsSuite with the compact layout (feature
// flag "CompactRoots", which requires "FileRoots"). Only the offsets of
// chunks 0..15 and of tag block 0 differ; headers, entries and roots are
// FileRoots'.
func NewCompactRootsSuite(alg Algorithm, chunkSize int, contentsKey, headerMACKey []byte) (*Suite, error) {
	s, err := NewRootsSuite(alg, chunkSize, contentsKey, headerMACKey)
	if err != nil {
		return nil, err
	}
	s.compact = true
	return s, nil
}

// Compact reports whether the suite stores tag block 0 compactly.
func (s *Suite) Compact() bool { return s.compact }

// TagPiece is a stored run of entries of one tag block: entries
// [First, First+Count) of the block at backing offset Offset.
type TagPiece struct {
	First, Count int
	Offset       int64
}

// TagPieces returns where the entries of tag block g of a file of n
// chunks are stored (g < the file's number of tag blocks): the whole
// block at TagBlockOffset(g), or in a compact suite for block 0 the
// pieces that exist (none for a file of one chunk).
func (s *Suite) TagPieces(g, n uint64) []TagPiece {
	if !s.compact || g > 0 {
		return []TagPiece{{0, TagEntries, s.TagBlockOffset(g)}}
	}
	var out []TagPiece
	ccs := int64(s.CipherChunkSize())
	if n >= 2 {
		out = append(out, TagPiece{0, CompactHeadEntries, int64(s.HeaderSize()) + ccs})
	}
	if n > CompactHeadEntries {
		out = append(out, TagPiece{CompactHeadEntries, TagEntries - CompactHeadEntries, int64(s.HeaderSize()) + compactHeadSize + CompactHeadEntries*ccs})
	}
	return out
}

// compactTagBytes is the stored size of the entries of a file of n
// chunks in a compact suite.
func compactTagBytes(n int64) int64 {
	var b int64
	if n >= 2 {
		b += compactHeadSize
	}
	if n > CompactHeadEntries {
		b += TagBlockSize - compactHeadSize
	}
	return b + max(tagBlocks(n)-1, 0)*TagBlockSize
}

// plainSizeCompact is plainSizeRoots for a compact suite's body of less
// than a group (past group 0 the layouts agree: group 0 has the same
// size). The stored pieces of group 0 are walked: a backing file that ends in a piece of
// entries holds the chunks before it (a crash kept the entries' write
// and lost the chunks', as in FileRoots).
func (s *Suite) plainSizeCompact(body int64) (int64, error) {
	ccs, cs := int64(s.CipherChunkSize()), int64(s.chunkSize)
	pieces := []struct{ tag, chunks int64 }{
		{0, 1}, {compactHeadSize, 0}, {0, CompactHeadEntries - 1},
		{TagBlockSize - compactHeadSize, 0}, {0, TagEntries - CompactHeadEntries},
	}
	var before int64 // whole chunks before the piece
	for _, p := range pieces {
		if p.tag > 0 {
			if body <= p.tag {
				return before * cs, nil
			}
			body -= p.tag
			continue
		}
		if body > p.chunks*ccs {
			body -= p.chunks * ccs
			before += p.chunks
			continue
		}
		full, last := body/ccs, body%ccs
		plain := (before + full) * cs
		if last == 0 {
			return plain, nil
		}
		if last <= int64(s.Overhead()) {
			return 0, fmt.Errorf("%w: last chunk of %d bytes has no plaintext", ErrTruncated, last)
		}
		return plain + last - int64(s.Overhead()), nil
	}
	panic("content: body below a group does not fit group 0") // unreachable: the pieces add up to a group
}

// EntryOffset is where chunk i's tag entry is stored in a file that has
// chunks after the piece holding it (roots suites only): in its tag
// block, or in a compact suite's piece of tag block 0.
func (s *Suite) EntryOffset(i uint64) int64 {
	if s.compact && i < TagEntries {
		for _, p := range s.TagPieces(0, TagEntries) {
			if int(i) < p.First+p.Count {
				return p.Offset + int64(int(i)-p.First)*TagSize
			}
		}
	}
	return s.TagBlockOffset(i/TagEntries) + int64(i%TagEntries)*TagSize
}
