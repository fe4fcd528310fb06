package content

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/macpool"
)

// A file with roots may be sparse: a hole, or the space a truncate adds,
// has zero tag entries, so most of the tag blocks of a large file can be
// all zeros. RootSparse computes the same root as Root from the hashes of
// the blocks that hold a non-zero entry only: an all-zero block's hash is
// a constant (zeroLeaf), and so is the node of a group of TagEntries
// all-zero blocks (zeroNode). Its cost is O(len(blocks)) hashing plus one
// 32-byte HMAC write per TagEntries blocks, which is what bounds the
// largest file with roots (MaxRootsChunks).

// MaxRootsChunks is the largest number of chunks of a file with roots:
// 2^38 chunks, 2^30 tag blocks, 2^22 second-level nodes. Why a bound: the
// root's HMAC input holds one 32-byte node per group of TagEntries tag
// blocks whatever the file holds, so a sparse file costs its size/2^24
// chunks of hashing at every clean close and first read. At the bound
// that input is 128 MiB (about 0.1 s with SHA-NI, measured in
// docs/format.md §16); a size above it is refused (EFBIG), as ext4 refuses
// files above 16 TiB. In bytes: 1 PiB at 4 KiB chunks, 4 PiB at the
// default 16 KiB, 256 PiB at 1 MiB.
const MaxRootsChunks = 1 << 38

// BlockHash is the TagBlockHash of tag block Index, for RootSparse.
type BlockHash struct {
	Index uint64
	Hash  [sha256.Size]byte
}

// zeroLeaf is the TagBlockHash of an all-zero tag block; zeroNode is the
// rootNode of TagEntries of them. Both are constants, computed once.
var (
	zeroLeaf = TagBlockHash(make([]byte, TagBlockSize))
	zeroNode = rootNode(repeatHash(zeroLeaf, TagEntries))
)

// ZeroTagBlockHash returns TagBlockHash of an all-zero tag block.
func ZeroTagBlockHash() [sha256.Size]byte { return zeroLeaf }

func repeatHash(h [sha256.Size]byte, n int) [][sha256.Size]byte {
	out := make([][sha256.Size]byte, n)
	for i := range out {
		out[i] = h
	}
	return out
}

// RootSparse is Root for a file of count tag blocks of which every block
// not in blocks is all zeros. blocks holds the TagBlockHash of the others,
// sorted by Index, each Index below count (a block listed with the hash of
// zeros is allowed), each hashed by l. It equals Root over the full list
// of count hashes.
func (s *Suite) RootSparse(l Leaves, id FileID, size, gen, count uint64, blocks []BlockHash) ([RootSize]byte, error) {
	var root [RootSize]byte
	for k := range blocks {
		if blocks[k].Index >= count || k > 0 && blocks[k].Index <= blocks[k-1].Index {
			return root, fmt.Errorf("content: sparse root: block %d out of order or past %d blocks", blocks[k].Index, count)
		}
	}
	var nums [24]byte
	binary.BigEndian.PutUint64(nums[0:], size)
	binary.BigEndian.PutUint64(nums[8:], gen)
	binary.BigEndian.PutUint64(nums[16:], count)
	zl, zn := l.zero()
	s.keyMu.RLock()
	defer s.keyMu.RUnlock()
	if s.wiped {
		return root, ErrWiped
	}
	macs := s.macsOf(0)
	if count <= smallRootBlocks {
		// A file of at most smallRootBlocks tag blocks (64 MiB at the
		// default chunk size): its leaves on the stack, and one Sum that
		// copies them, so a small file's root allocates nothing. (A
		// buffer for TagEntries leaves cost more than it saved: 8 KiB
		// zeroed on every call.)
		var buf [smallRootBlocks * sha256.Size]byte
		leaves := appendLeaves(buf[:0], 0, count, blocks, zl)
		macs.Sum(root[:], []byte(rootLabel), id[:], nums[:], leaves)
		return root, nil
	}
	return rootStreamed(macs, id, nums, count, blocks, zl, zn), nil
}

// smallRootBlocks bounds the files whose root RootSparse computes from a
// buffer on the stack.
const smallRootBlocks = 16

// rootStreamed is RootSparse for more than smallRootBlocks blocks, the
// HMAC streamed: over the leaves up to TagEntries blocks, over the
// second-level nodes past that. Apart, so that the pieces it writes to
// the hash.Hash (which escape) are copies made only here.
func rootStreamed(macs *macpool.Pool, id FileID, nums [24]byte, count uint64, blocks []BlockHash, zl, zn [sha256.Size]byte) [RootSize]byte {
	m := macs.Get()
	defer macs.Put(m)
	m.Write([]byte(rootLabel))
	m.Write(id[:])
	m.Write(nums[:])
	if count <= TagEntries {
		var buf [TagEntries * sha256.Size]byte
		m.Write(appendLeaves(buf[:0], 0, count, blocks, zl))
	} else {
		writeNodes(m, count, blocks, zl, zn)
	}
	var sum [sha256.Size]byte
	var root [RootSize]byte
	copy(root[:], m.Sum(sum[:0]))
	return root
}

// hashWriter is what the root's levels are written to.
type hashWriter interface{ Write([]byte) (int, error) }

// appendLeaves appends to dst the hashes of blocks [from, to): those in
// blocks (sorted, all inside the range) and zl (an all-zero block's) for
// the others.
func appendLeaves(dst []byte, from, to uint64, blocks []BlockHash, zl [sha256.Size]byte) []byte {
	k := 0
	for j := from; j < to; j++ {
		if k < len(blocks) && blocks[k].Index == j {
			dst = append(dst, blocks[k].Hash[:]...)
			k++
			continue
		}
		dst = append(dst, zl[:]...)
	}
	return dst
}

// writeNodes writes the second-level nodes of count blocks to m: a group
// holding a listed block is hashed, a full group without one is zn (the
// node of TagEntries all-zero blocks), a partial last group without one
// is hashed from zl.
func writeNodes(m hashWriter, count uint64, blocks []BlockHash, zl, zn [sha256.Size]byte) {
	groups := (count + TagEntries - 1) / TagEntries
	// Runs of empty groups go out zeroRun nodes per Write.
	const zeroRun = 64
	var zeros [zeroRun * sha256.Size]byte
	for i := range zeroRun {
		copy(zeros[i*sha256.Size:], zn[:])
	}
	node := func(grp uint64, in []BlockHash) {
		var buf [1 + TagEntries*sha256.Size]byte
		buf[0] = 1
		leaves := appendLeaves(buf[:1], grp*TagEntries, min((grp+1)*TagEntries, count), in, zl)
		out := sha256.Sum256(leaves)
		m.Write(out[:])
	}
	last := groups - 1
	for grp := uint64(0); grp < groups; {
		next := last // the next group to hash: one with blocks, or the last
		if len(blocks) > 0 {
			next = min(next, blocks[0].Index/TagEntries)
		}
		for run := next - grp; run > 0; {
			n := min(run, zeroRun)
			m.Write(zeros[:n*sha256.Size])
			run -= n
		}
		k := 0
		for k < len(blocks) && blocks[k].Index/TagEntries == next {
			k++
		}
		node(next, blocks[:k])
		blocks = blocks[k:]
		grp = next + 1
	}
}
