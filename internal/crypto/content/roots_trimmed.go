package content

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Trimmed leaves (feature flag "TrimmedLeaves", header flag TRIMMED,
// docs/format.md §16 "Trimmed leaves"). FileRoots hashes every tag block
// whole into the root: SHA-256(0x00 ‖ 4096 bytes), zeros past the file's
// last chunk included. A file of one chunk has one 16-byte entry, so its
// root cost 65 SHA-256 blocks to hash 16 bytes that matter, at every
// clean close and every check of the root (the largest part of what a
// small file costs format 2 over format 1: docs/performance.md). A root
// with trimmed leaves hashes each block up to its last non-zero entry:
//
//	leaf = SHA-256(0x02 ‖ block[:16*m])
//
// where m is one more than the index of the block's last non-zero entry
// (0 for an all-zero block). The root's HMAC input is otherwise
// FileRoots' (Root): the same label, file ID, size, gen, count and
// second-level nodes (SHA-256(0x01 ‖ leaves), built over trimmed leaves).
//
// Why it is as strong: the map from a 4096-byte block to its trimmed
// form is one to one (only trailing zero entries are dropped, and the
// block's length is fixed), so two blocks with the same leaf are a
// SHA-256 collision, as with whole blocks. Entries past the file's last
// chunk are zero in both forms (the engine and fsck check it), and a hole
// inside the file is a zero entry before a non-zero one, so it is hashed.
// Why 0x02: the prefix keeps a trimmed leaf apart from a whole-block leaf
// (0x00) and a node (0x01), so no input is read under another rule.
// Why a header flag as well as the vault's: the files of a vault that
// gains the feature (encryptfs upgrade) keep their roots until their next
// clean header, which the engine writes with trimmed leaves; each header
// says which rule its own root follows, under its MAC, so the storage
// cannot switch a file to the other rule.

// FlagTrimmed (v2 headers of a suite with trimmed leaves only): the
// header's root is computed with trimmed leaves.
const FlagTrimmed = 0x0008

// Leaves is the rule that hashes a tag block into a root.
type Leaves uint8

const (
	// WholeLeaves: SHA-256(0x00 ‖ block), all 4096 bytes (FileRoots).
	WholeLeaves Leaves = iota
	// TrimmedLeaves: SHA-256(0x02 ‖ the block up to its last non-zero
	// entry).
	TrimmedLeaves
)

// LeavesOf returns the rule of header h's root.
func LeavesOf(h Header) Leaves {
	if h.Flags&FlagTrimmed != 0 {
		return TrimmedLeaves
	}
	return WholeLeaves
}

// Flag returns the header flag that says l (0 for WholeLeaves).
func (l Leaves) Flag() uint16 {
	if l == TrimmedLeaves {
		return FlagTrimmed
	}
	return 0
}

// Hash returns the leaf of tag block block (TagBlockSize bytes) under l.
func (l Leaves) Hash(block []byte) [sha256.Size]byte {
	if l == TrimmedLeaves {
		return TrimmedBlockHash(block)
	}
	return TagBlockHash(block)
}

// zero returns the leaf of an all-zero block and the node of TagEntries
// of them under l: constants.
func (l Leaves) zero() (leaf, node [sha256.Size]byte) {
	if l == TrimmedLeaves {
		return zeroTrimmedLeaf, zeroTrimmedNode
	}
	return zeroLeaf, zeroNode
}

var (
	zeroTrimmedLeaf = TrimmedBlockHash(make([]byte, TagBlockSize))
	zeroTrimmedNode = rootNode(repeatHash(zeroTrimmedLeaf, TagEntries))
)

// TrimmedBlockHash is the trimmed leaf of a tag block:
// SHA-256(0x02 ‖ block[:TrimmedLen(block)]).
func TrimmedBlockHash(block []byte) [sha256.Size]byte {
	if len(block) != TagBlockSize {
		panic(fmt.Sprintf("content: tag block of %d bytes", len(block)))
	}
	return trimmedLeaf(block[:TrimmedLen(block)])
}

// trimmedLeaf is SHA-256(0x02 ‖ trimmed), trimmed being a block up to
// its last non-zero entry.
func trimmedLeaf(trimmed []byte) [sha256.Size]byte {
	n := len(trimmed)
	if n < trimmedOnStack {
		// A file of up to 15 chunks (most files): one Sum256 of a small
		// buffer on the stack, no allocation.
		var in [trimmedOnStack]byte
		in[0] = 2
		copy(in[1:], trimmed)
		return sha256.Sum256(in[:1+n])
	}
	h := sha256.New()
	h.Write([]byte{2})
	h.Write(trimmed)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// HashBounded is l.Hash(block) for a tag block whose entries from index
// top on the caller knows to be zero (it wrote them, and keeps the bound
// as it writes: the file engine's tagTable), and whether the block is
// all zero, in which case leaf is the zero block's. The scans for zeros
// stop at the bound instead of covering 4 KiB, most of it zeros past a
// small file's one entry: in a perf record of an untar they were two
// scans of every small file's block, one to drop an all-zero block and
// one to trim it. A bound that is too low gives a leaf that is not the
// block's, so a root written over it would fail the file's next check
// (EIO): the caller may only raise the bound before it writes entries.
func (l Leaves) HashBounded(block []byte, top int) (leaf [sha256.Size]byte, zero bool) {
	if len(block) != TagBlockSize || top < 0 || top > TagEntries {
		panic(fmt.Sprintf("content: tag block of %d bytes bounded at entry %d", len(block), top))
	}
	n := TrimmedLen(block[:top*TagSize])
	if n == 0 {
		leaf, _ = l.zero()
		return leaf, true
	}
	if l == TrimmedLeaves {
		return trimmedLeaf(block[:n]), false
	}
	return TagBlockHash(block), false
}

// trimmedOnStack bounds the trimmed blocks hashed from a stack buffer.
const trimmedOnStack = 256

// TrimmedLen is the length of block up to and including its last
// non-zero entry: a multiple of TagSize, 0 for an all-zero block.
//
// A small file's block is all zero but its first entries, so the scan
// from the end compares 256 bytes (16 entries) a step with zeros (the
// runtime's vector compare), then finds the entry within the last step
// that was not all zero.
func TrimmedLen(block []byte) int {
	const step = 16 * TagSize
	var zeros [step]byte
	n := len(block)
	for n >= step && bytes.Equal(block[n-step:n], zeros[:]) {
		n -= step
	}
	for ; n >= TagSize; n -= TagSize {
		e := block[n-TagSize : n]
		if binary.NativeEndian.Uint64(e)|binary.NativeEndian.Uint64(e[8:]) != 0 {
			return n
		}
	}
	return 0
}

// NewLeaves is the rule of the roots this suite writes: TrimmedLeaves in
// a suite made with RootsOptions.Trimmed, else WholeLeaves.
func (s *Suite) NewLeaves() Leaves {
	if s.trimmed {
		return TrimmedLeaves
	}
	return WholeLeaves
}

// RootsOptions are the optional parts of a roots suite.
type RootsOptions struct {
	// Compact: tag block 0 in pieces (feature flag "CompactRoots",
	// roots_compact.go).
	Compact bool
	// Trimmed: roots written with trimmed leaves, and headers with the
	// TRIMMED flag accepted (feature flag "TrimmedLeaves").
	Trimmed bool
}

// NewRootsSuiteWith is NewRootsSuite with the options o.
func NewRootsSuiteWith(alg Algorithm, chunkSize int, contentsKey, headerMACKey []byte, o RootsOptions) (*Suite, error) {
	s, err := NewRootsSuite(alg, chunkSize, contentsKey, headerMACKey)
	if err != nil {
		return nil, err
	}
	s.compact, s.trimmed = o.Compact, o.Trimmed
	return s, nil
}
