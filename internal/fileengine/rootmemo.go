package fileengine

import (
	"bytes"
	"crypto/subtle"
	"sync"
	"sync/atomic"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// rootMemo spares a small file's root its hashing when the file is read
// again by the engine that wrote or checked it (tar -x then md5sum, a
// build that writes objects and links them): it remembers, per file ID,
// the last clean state that this engine computed the root of, with the
// tag entries the root was computed over. Checking a clean file's stored
// tag block against its root costs the SHA-256 of the 4 KiB block and
// an HMAC, the larger part of what format 2 adds to a read of a small
// file (docs/performance.md, "Format 2 against format 1, per file").
//
// What it replaces is the hash, not the read: the tag entries are still
// read from the backing file (from chunk 0 itself for a file of one
// chunk), and they are accepted without hashing only if they are,
// byte for byte, the entries remembered for the header's own file ID,
// size, gen and root. The header is authenticated (its MAC) before
// this, and a root commits to its entries (SHA-256 and HMAC-SHA256
// collision resistance), so stored entries equal to the remembered ones
// are exactly those that would hash to the root: the check accepts and
// refuses what hashing would, tampered or rolled-back entries included.
// Anything else (another gen, a torn write, an entry changed on the
// backing file) falls through to the full check.
//
// Only files of at most memoChunks chunks are remembered, the files for
// which the 4 KiB hash costs most against the data read. Bounded in
// entries and in bytes; when full it starts again empty, which costs
// only speed.
type rootMemo struct {
	mu    sync.Mutex
	m     map[content.FileID]memoRoot
	bytes int           // sum of len(entries)
	hits  atomic.Uint64 // matches that spared a hash (read by tests)
}

// memoRoot is a clean state of a file: its header's size, gen and root,
// and the tag entries of its chunks (chunk i's at [16i, 16i+16)); the
// entries past them are zero.
type memoRoot struct {
	size, gen uint64
	root      [content.RootSize]byte
	entries   []byte // read only once remembered
}

const (
	// memoChunks: files of at most piece A's entries (256 KiB at the
	// default 16 KiB chunks).
	memoChunks = content.CompactHeadEntries
	// maxMemo and maxMemoBytes bound the memo: about 80 bytes a file
	// plus its entries, at most 7 MiB.
	maxMemo      = 1 << 16
	maxMemoBytes = 2 << 20
)

// remember records that block (the tag block 0 of a file of n chunks)
// hashes to root for file id at size and gen.
// Files of more than memoChunks chunks are not remembered.
func (rm *rootMemo) remember(id content.FileID, size, gen uint64, root [content.RootSize]byte, n uint64, block []byte) {
	if n > memoChunks {
		return
	}
	entries := bytes.Clone(block[:n*content.TagSize])
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if old, ok := rm.m[id]; ok {
		rm.bytes -= len(old.entries)
	} else if len(rm.m) >= maxMemo || rm.bytes+len(entries) > maxMemoBytes {
		clear(rm.m)
		rm.bytes = 0
	}
	if rm.m == nil {
		rm.m = make(map[content.FileID]memoRoot)
	}
	rm.m[id] = memoRoot{size: size, gen: gen, root: root, entries: entries}
	rm.bytes += len(entries)
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
	if !ok || got.size != size || got.gen != gen || uint64(len(got.entries)) != n*content.TagSize {
		return false
	}
	if subtle.ConstantTimeCompare(got.root[:], root[:]) != 1 {
		return false
	}
	stored := block[:len(got.entries)]
	if subtle.ConstantTimeCompare(stored, got.entries) != 1 || !isZero(block[len(got.entries):]) {
		return false
	}
	rm.hits.Add(1)
	return true
}
