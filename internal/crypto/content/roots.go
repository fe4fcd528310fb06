package content

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"math"
)

// File roots (docs/design/format-v2.md §5, docs/format.md §16): a bound
// suite made with NewRootsSuite interleaves tag blocks with the chunks and
// keeps, in the v2 header, the file's size, a generation and a root that
// authenticates every chunk of one version of the file as a whole.
//
// Layout. Chunk i belongs to group g = i / TagEntries. Group g starts with
// tag block g (TagBlockSize bytes: TagEntries entries of TagSize bytes),
// followed by the group's chunks, so a chunk's offset is still a function
// of its index:
//
//	tagBlockOffset(g) = header + g*(TagBlockSize + TagEntries*CipherChunkSize)
//	chunkOffset(i)    = tagBlockOffset(i/TagEntries) + TagBlockSize + (i%TagEntries)*CipherChunkSize
//
// A group's tag block exists as soon as the file has a chunk in the group.
// Entry i%TagEntries of block g is chunk i's AEAD tag (the 16 bytes
// ChunkTag returns), or 16 zero bytes for a hole. Entries past the file's
// last chunk are zero.
const (
	// TagEntries is the number of entries of a tag block.
	TagEntries = 256
	// TagBlockSize is the stored size of a tag block (one 4 KiB page).
	TagBlockSize = TagEntries * TagSize
	// RootSize is the size of the header's root.
	RootSize = 16
	// FlagDirty marks a v2 file whose root is stale: written since its
	// last clean close or fsync. Only a roots suite accepts it.
	FlagDirty = 0x0002
	// rootLabel prefixes the root's HMAC input. Why a label: the header
	// MAC key also MACs headers, whose input starts with the version u16
	// (first byte 0x00); this input starts with 'e' (0x65), so no root can
	// ever equal a header MAC of the same bytes or the reverse.
	rootLabel = "encryptfs v2 file root"
)

// ErrBadRoot: a file's tag blocks, size or chunk tags do not match the
// root in its header (a chunk or tag block from another version of the
// file, a chunk replaced by a hole, a file cut short). It wraps
// ErrCorruptChunk, so every caller that handles a failed chunk (the FUSE
// layer's EIO, fsck's bad-chunk) handles it too.
var ErrBadRoot = fmt.Errorf("%w: file root mismatch", ErrCorruptChunk)

// NewRootsSuite is NewBoundSuite with file roots (feature flag
// "FileRoots", which requires "BoundLocations"): tag blocks between the
// chunks, and size, gen, root and the DIRTY flag in the header.
func NewRootsSuite(alg Algorithm, chunkSize int, contentsKey, headerMACKey []byte) (*Suite, error) {
	s, err := NewBoundSuite(alg, chunkSize, contentsKey, headerMACKey)
	if err != nil {
		return nil, err
	}
	s.roots = true
	return s, nil
}

// Roots reports whether the suite's files have tag blocks and roots.
func (s *Suite) Roots() bool { return s.roots }

// groupCipherSize is the stored size of a full group: a tag block and
// TagEntries full chunks.
func (s *Suite) groupCipherSize() int64 {
	return TagBlockSize + TagEntries*int64(s.CipherChunkSize())
}

// TagBlockOffset is where tag block g starts in the backing file (roots
// suites only; in a compact suite, block 0 is stored in pieces:
// TagPieces).
func (s *Suite) TagBlockOffset(g uint64) int64 {
	return int64(s.HeaderSize()) + int64(g)*s.groupCipherSize()
}

// ChunkOffset is where chunk i starts in the backing file: after the
// header, and with roots after the tag blocks of groups 0..i/TagEntries
// (compact: chunk 0 right after the header, chunks 1..15 after piece A
// of tag block 0, roots_compact.go).
func (s *Suite) ChunkOffset(i uint64) int64 {
	off := int64(s.HeaderSize()) + int64(i)*int64(s.CipherChunkSize())
	switch {
	case s.compact && i == 0:
	case s.compact && i < CompactHeadEntries:
		off += compactHeadSize
	case s.roots:
		off += int64(i/TagEntries+1) * TagBlockSize
	}
	return off
}

// tagBlocks is the number of tag blocks of a file of n chunks.
func tagBlocks(n int64) int64 { return (n + TagEntries - 1) / TagEntries }

// cipherSizeRoots is CipherSize with tag blocks.
func (s *Suite) cipherSizeRoots(plain int64) int64 {
	cs := int64(s.chunkSize)
	chunks := (plain + cs - 1) / cs
	tags := tagBlocks(chunks) * TagBlockSize
	if s.compact {
		tags = compactTagBytes(chunks)
	}
	return int64(s.HeaderSize()) + plain + chunks*int64(s.Overhead()) + tags
}

// plainSizeRoots is PlainSize with tag blocks (cipher > header size).
func (s *Suite) plainSizeRoots(body int64) (int64, error) {
	if s.compact && body < s.groupCipherSize() {
		return s.plainSizeCompact(body)
	}
	g := s.groupCipherSize()
	full, rest := body/g, body%g
	plain := full * TagEntries * int64(s.chunkSize)
	if rest == 0 {
		return plain, nil
	}
	if rest <= TagBlockSize {
		// A group cut inside its tag block holds no chunk: the file is its
		// full groups. Tag entries are written after their chunks, but a
		// power loss may keep the entries' write and lose the chunks', as
		// it may lose any append; the old last chunk is then not final
		// and fails as in v1, and a clean header says the exact size
		// (internal/fileengine checks it against the backing file).
		return plain, nil
	}
	rest -= TagBlockSize
	ccs := int64(s.CipherChunkSize())
	chunks, last := rest/ccs, rest%ccs
	plain += chunks * int64(s.chunkSize)
	if last == 0 {
		return plain, nil
	}
	if last <= int64(s.Overhead()) {
		return 0, fmt.Errorf("%w: last chunk of %d bytes has no plaintext", ErrTruncated, last)
	}
	return plain + last - int64(s.Overhead()), nil
}

// maxPlainSizeRoots is MaxPlainSize with tag blocks: whole groups only,
// and at most MaxRootsChunks chunks (the bound on the root's cost).
func (s *Suite) maxPlainSizeRoots() int64 {
	groups := (math.MaxInt64 - int64(s.HeaderSize())) / s.groupCipherSize()
	return min(groups*TagEntries, MaxRootsChunks) * int64(s.chunkSize)
}

// ChunkTag returns the 16-byte AEAD tag of a stored chunk, the value of
// its tag-block entry: the GCM or Poly1305 tag at the end of the chunk,
// or the SIV after the nonce for AES-SIV. Why the tag: it is computed by
// the seal anyway (no extra hashing on the write path) and it depends on
// the nonce, the associated data and the whole ciphertext under the file
// key, so two seals of chunk i (two versions) have different tags except
// with probability 2^-128 per pair, and an attacker who cannot seal
// cannot make a chunk that opens and carries a chosen tag.
func (f *FileCipher) ChunkTag(stored []byte) []byte {
	if f.siv != nil {
		return stored[f.nonceSize : f.nonceSize+TagSize]
	}
	return stored[len(stored)-TagSize:]
}

// TagBlockHash is the hash of a tag block in the root's input:
// SHA-256(0x00 ‖ block). The 0x00 prefix (0x01 for a second-level node)
// keeps a leaf from being read as a node.
func TagBlockHash(block []byte) [sha256.Size]byte {
	if len(block) != TagBlockSize {
		panic(fmt.Sprintf("content: tag block of %d bytes", len(block)))
	}
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(block)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// rootNode is a second-level node: SHA-256(0x01 ‖ up to TagEntries tag
// block hashes).
func rootNode(hashes [][sha256.Size]byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte{1})
	for i := range hashes {
		h.Write(hashes[i][:])
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// Root computes a file's root from its size, gen and the hashes of its
// tag blocks (TagBlockHash, one per group, in order):
//
//	root = HMAC-SHA256(header MAC key, "encryptfs v2 file root" ‖ fileID ‖
//	                   size u64 ‖ gen u64 ‖ count u64 ‖ L_0 ‖ … ‖ L_k)[:16]
//
// where count is the number of tag blocks and L are the tag block hashes
// themselves when there are at most TagEntries of them, else the
// second-level nodes over runs of TagEntries hashes (rootNode), so that
// the HMAC input stays at most 8 KiB + 62 bytes up to 2^16 tag blocks
// (2^24 chunks: 64 GiB at 4 KiB chunks, 256 GiB at 16 KiB) and a change
// of one tag block rehashes one node. Why the header MAC key: the root
// lives in the header, which that key already authenticates, and the
// label keeps the two inputs apart (rootLabel); no content key is used,
// so the per-file content keys are untouched. Why fileID in the input:
// a root is only ever valid for its own file, even across headers.
// Why 16 bytes: as the header MAC, forgery is an online 2^-128 guess.
// l is the rule the hashes were made with (TrimmedLeaves: roots_trimmed.go).
func (s *Suite) Root(l Leaves, id FileID, size, gen uint64, hashes [][sha256.Size]byte) ([RootSize]byte, error) {
	// One computation for both forms: the dense list is the sparse one
	// with every block listed (RootSparse, which the engine uses).
	blocks := make([]BlockHash, len(hashes))
	for i := range hashes {
		blocks[i] = BlockHash{Index: uint64(i), Hash: hashes[i]}
	}
	return s.RootSparse(l, id, size, gen, uint64(len(hashes)), blocks)
}

// CheckRoot compares a computed root with the header's in constant time.
func CheckRoot(want, got [RootSize]byte) error {
	if !hmac.Equal(want[:], got[:]) {
		return ErrBadRoot
	}
	return nil
}
