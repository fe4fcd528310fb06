package fileengine

import (
	"crypto/sha256"
	"crypto/subtle"
	"sync"
	"sync/atomic"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// rootMemo spares a small file's root its hashing when the file is read
// again by the engine that wrote or checked it (tar -x then md5sum, a
// build that writes objects and links them): it remembers, per file ID,
// the last clean state that this engine computed the root of, with a
// digest of the tag entries the root was computed over. Checking a
// clean file's stored tag block against its root costs the SHA-256 of
// the 4 KiB block and an HMAC, the larger part of what format 2 adds to
// a read of a small file (docs/performance.md, "Format 2 against format
// 1, per file"); the digest costs one to five SHA-256 blocks.
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
// which the 4 KiB hash costs most against the data read. About 80 bytes
// a file, at most maxMemo files (about 6 MiB); when full it starts again
// empty, which costs only speed.
type rootMemo struct {
	mu   sync.Mutex
	m    map[content.FileID]memoRoot
	hits atomic.Uint64 // matches that spared a hash (read by tests)
}

// memoRoot is a clean state of a file: its header's size, gen and root,
// and the SHA-256 of the tag entries of its chunks (16 bytes a chunk, in
// order); the entries past them are zero.
type memoRoot struct {
	size, gen uint64
	root      [content.RootSize]byte
	entries   [sha256.Size]byte
}

const (
	// memoChunks: files of at most piece A's entries (256 KiB at the
	// default 16 KiB chunks).
	memoChunks = content.CompactHeadEntries
	// maxMemo bounds the memo.
	maxMemo = 1 << 16
)

// remember records that block (the tag block 0 of a file of n chunks)
// hashes to root for file id at size and gen. Files of more than
// memoChunks chunks are not remembered.
func (rm *rootMemo) remember(id content.FileID, size, gen uint64, root [content.RootSize]byte, n uint64, block []byte) {
	if n > memoChunks {
		return
	}
	e := memoRoot{size: size, gen: gen, root: root, entries: sha256.Sum256(block[:n*content.TagSize])}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if _, ok := rm.m[id]; !ok && len(rm.m) >= maxMemo {
		clear(rm.m)
	}
	if rm.m == nil {
		rm.m = make(map[content.FileID]memoRoot)
	}
	rm.m[id] = e
}

// matches reports whether the stored tag block 0 of a file of n chunks
// (block: all of it, zeros for an empty file) is the one remembered for
// file id at size, gen and root: then it hashes to root.
func (rm *rootMemo) matches(id content.FileID, size, gen uint64, root [content.RootSize]byte, n uint64, block []byte) bool {
	if n > memoChunks {
		return false
	}
	rm.mu.Lock()
	got, ok := rm.m[id]
	rm.mu.Unlock()
	if !ok || got.size != size || got.gen != gen || subtle.ConstantTimeCompare(got.root[:], root[:]) != 1 {
		return false
	}
	entries := block[:n*content.TagSize]
	if d := sha256.Sum256(entries); subtle.ConstantTimeCompare(d[:], got.entries[:]) != 1 || !isZero(block[len(entries):]) {
		return false
	}
	rm.hits.Add(1)
	return true
}
