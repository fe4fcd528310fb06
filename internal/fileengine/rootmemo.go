package fileengine

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// rootMemo spares a small file's root its hashing when the file is read
// again by the engine that wrote or checked it (tar -x then md5sum, a
// build that writes objects and links them): it remembers, per file ID,
// the last clean state that this engine computed the root of, as one
// digest of its header fields and the tag entries the root was computed
// over. Checking a
// clean file's stored tag block against its root costs the SHA-256 of
// the 4 KiB block and an HMAC, the larger part of what format 2 adds to
// a read of a small file (docs/performance.md, "Format 2 against format
// 1, per file"); the digest costs two to six SHA-256 blocks.
//
// What it replaces is the hash of the block, not the read: the tag
// entries are still read from the backing file (from chunk 0 itself for
// a file of one chunk), and they are accepted without the root's hash
// only if their digest is the one remembered for the header's own file
// ID, size, gen and root, and the entries past the file's chunks are
// zero. The header is authenticated (its MAC) before this, and both the
// root and the digest commit to the entries (SHA-256 and HMAC-SHA256
// collision resistance), so entries that match are exactly those that
// would hash to the root: the check accepts and refuses what hashing
// would, tampered or rolled-back entries included. Anything else
// (another gen, a torn write, an entry changed on the backing file)
// falls through to the full check.
//
// Only files of at most memoChunks chunks are remembered, the files for
// which the 4 KiB hash costs most against the data read, and only under
// whole-block leaves (content.WholeLeaves: vaults made before trimmed
// leaves and not upgraded). Under trimmed leaves (what init makes) the
// root's own check hashes only the entries the file has, which the
// digest hashes too, so a hit spares only the root's HMAC: on the VM of
// 2026-11-29, for a one-chunk file, the check 0.31 µs against the root's
// 0.49, and remembering costs 0.25 µs at every close of a written file
// and every first check, which is paid whether or not the file is read
// again in the mount (a read after the close is rare: the kernel keeps
// the pages, FOPEN_KEEP_CACHE). Under trimmed leaves the memo cost more
// than it spared, and held about 3.6 MiB of heap after a tar -x of the
// kernel subset (docs/performance.md, "Format 2's cost by feature").
// The digest's input still names the rule.
//
// What it holds, per file ID, is the SHA-256 of the last clean state of
// the file (its ID, size, gen and root, and the entries): 48 bytes a
// file, about 96 bytes of heap with the map's own, at most maxMemo files
// (about 7 MiB), emptied when full, which costs only speed. A first
// version kept the size, gen, root and a digest of the entries apart
// (96 bytes a file): 6.5 MiB of live heap after a tar -x of the kernel
// subset's 38k files, which the collector's headroom made about 13 MiB
// more peak RSS during the next row; this form holds 3.5 MiB there.
type rootMemo struct {
	mu   sync.Mutex
	m    map[content.FileID][sha256.Size]byte
	hits atomic.Uint64 // matches that spared a hash (read by tests)
}

const (
	// memoChunks: files of at most piece A's entries (256 KiB at the
	// default 16 KiB chunks).
	memoChunks = content.CompactHeadEntries
	// maxMemo bounds the memo.
	maxMemo = 1 << 16
	// memoDomain starts every digest (a label of this use alone).
	memoDomain = "encryptfs root memo v1\x00"
)

// memoKey is the digest of a clean state: file id at size and gen with
// root under rule l, over the tag entries of its n chunks (16 bytes each,
// in order). Every field but the entries has a fixed size, and n follows
// from size, so no two states give the same input.
func memoKey(id content.FileID, l content.Leaves, size, gen uint64, root [content.RootSize]byte, entries []byte) [sha256.Size]byte {
	var b [len(memoDomain) + len(content.FileID{}) + 1 + 16 + content.RootSize + memoChunks*content.TagSize]byte
	o := copy(b[:], memoDomain)
	o += copy(b[o:], id[:])
	b[o] = byte(l)
	o++
	binary.BigEndian.PutUint64(b[o:], size)
	binary.BigEndian.PutUint64(b[o+8:], gen)
	o += 16
	o += copy(b[o:], root[:])
	o += copy(b[o:], entries) // at most memoChunks entries (callers)
	return sha256.Sum256(b[:o])
}

// memoWorth reports whether the root of a file of n chunks under rule l
// is worth remembering: whole-block leaves, at most memoChunks chunks.
func memoWorth(l content.Leaves, n uint64) bool {
	return l == content.WholeLeaves && n <= memoChunks
}

// remember records that block (the tag block 0 of a file of n chunks)
// hashes to root under rule l for file id at size and gen, if memoWorth.
func (rm *rootMemo) remember(id content.FileID, l content.Leaves, size, gen uint64, root [content.RootSize]byte, n uint64, block []byte) {
	if !memoWorth(l, n) {
		return
	}
	k := memoKey(id, l, size, gen, root, block[:n*content.TagSize])
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if _, ok := rm.m[id]; !ok && len(rm.m) >= maxMemo {
		clear(rm.m)
	}
	if rm.m == nil {
		rm.m = make(map[content.FileID][sha256.Size]byte)
	}
	rm.m[id] = k
}

// matches reports whether the stored tag block 0 of a file of n chunks
// (block: all of it, zeros for an empty file; zeroPast: its entries from
// n on are zero, as the table knows from its bound) is the one
// remembered for file id at size, gen and root under rule l: then it
// hashes to root.
func (rm *rootMemo) matches(id content.FileID, l content.Leaves, size, gen uint64, root [content.RootSize]byte, n uint64, block []byte, zeroPast bool) bool {
	if !memoWorth(l, n) || !zeroPast {
		return false
	}
	rm.mu.Lock()
	want, ok := rm.m[id]
	rm.mu.Unlock()
	if !ok {
		return false
	}
	entries := block[:n*content.TagSize]
	if k := memoKey(id, l, size, gen, root, entries); subtle.ConstantTimeCompare(k[:], want[:]) != 1 {
		return false
	}
	rm.hits.Add(1)
	return true
}
