package fileengine

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// TestRootMemoSameVerdicts: an engine that remembers a file's root
// (rootMemo: it wrote the file) accepts and refuses exactly what an
// engine that hashes does, for the file as written, an older version of
// it, and every one-byte change, cut and extension of the stored bytes;
// and it spares the hash only for the file as written, at most
// memoChunks chunks long. (A changed chunk whose entries are intact is
// spared the hash too, and refused by its tag, as after hashing.)
func TestRootMemoSameVerdicts(t *testing.T) {
	const cs = 4 << 10
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 7))
			for _, size := range []int{1, cs, cs + 5000, 3*cs + 7, memoChunks * cs, memoChunks*cs + 1} {
				warm := newCompactEngine(t, alg, sequential(uint64(size)))
				cold := newCompactEngine(t, alg, sequential(uint64(size)))
				old := randomBytes(r, size)
				m := rootsFile(t, warm, old)
				older := bytes.Clone(m.Bytes())
				plain := randomBytes(r, size)
				rewrite(t, warm, m, plain, 0)
				stored := m.Bytes()

				hits := warm.memo.hits.Load()
				verdict(t, warm, cold, stored, plain)
				spared := warm.memo.hits.Load() - hits
				if small := size <= memoChunks*cs; small && spared != 1 || !small && spared != 0 {
					t.Fatalf("%d bytes: %d reads spared the hash, want %v", size, spared, small)
				}
				for _, at := range tamperPlaces(warm, len(stored)) {
					b := bytes.Clone(stored)
					b[at] ^= 0x40
					verdict(t, warm, cold, b, plain)
				}
				verdict(t, warm, cold, stored[:len(stored)-1], plain)
				verdict(t, warm, cold, append(bytes.Clone(stored), 0), plain)
				if a := warm.lay.entryOffset(0); int64(len(stored)) > a {
					// Chunk 1 of the older version with its entry: each
					// authenticates, only the root tells them apart.
					b := bytes.Clone(stored)
					c1 := warm.cipherOffset(1)
					copy(b[c1:c1+int64(warm.cipherChunk)], older[c1:])
					copy(b[a+16:a+32], older[a+16:])
					verdict(t, warm, cold, b, plain)
				}
				// Last: reading it remembers the older version instead.
				verdict(t, warm, cold, older, old)
			}
		})
	}
}

// TestRootMemoWholeLeavesOnly: under trimmed leaves (init's) the memo
// remembers nothing, written or read, so every read hashes the entries
// (memoWorth: the digest would hash them too); the verdicts are those of
// an engine that never remembered (verdict), tampered files included.
func TestRootMemoWholeLeavesOnly(t *testing.T) {
	const cs = 4 << 10
	r := rand.New(rand.NewPCG(9, 9))
	compactRoots, trimmedLeaves = true, true
	e := newRootsEngine(t, content.AES256GCM, cs, sequential(1))
	cold := newRootsEngine(t, content.AES256GCM, cs, sequential(2))
	compactRoots, trimmedLeaves = false, false
	for _, size := range []int{1, cs, 3*cs + 7, memoChunks * cs} {
		plain := randomBytes(r, size)
		m := rootsFile(t, e, plain)
		stored := m.Bytes()
		verdict(t, e, cold, stored, plain)
		for _, at := range tamperPlaces(e, len(stored)) {
			b := bytes.Clone(stored)
			b[at] ^= 0x40
			verdict(t, e, cold, b, plain)
		}
	}
	e.memo.mu.Lock()
	n := len(e.memo.m)
	e.memo.mu.Unlock()
	if n != 0 || e.memo.hits.Load() != 0 {
		t.Fatalf("trimmed leaves: %d files remembered, %d hits; want none", n, e.memo.hits.Load())
	}
}

// tamperPlaces are the stored bytes worth changing: the header's root and
// gen, the first, a middle and the last byte of each chunk, and every
// byte of tag block 0's piece A where the file has one.
func tamperPlaces(e *Engine, n int) []int {
	at := []int{24, 32, 40, 55}
	for i := uint64(0); e.cipherOffset(i) < int64(n); i++ {
		o := int(e.cipherOffset(i))
		end := min(o+e.cipherChunk, n)
		at = append(at, o, (o+end)/2, end-1)
	}
	if a := int(e.lay.entryOffset(0)); n > a {
		for i := a; i < min(a+memoChunks*16, n); i++ {
			at = append(at, i)
		}
	}
	return at
}

// verdict opens and reads stored with both engines, cold with nothing
// remembered: both must read want, or both fail.
func verdict(t *testing.T, warm, cold *Engine, stored, want []byte) {
	t.Helper()
	w, errW := readStored(warm, stored)
	cold.memo.forget()
	c, errC := readStored(cold, stored)
	if (errW == nil) != (errC == nil) {
		t.Fatalf("remembering engine: %v, hashing engine: %v", errW, errC)
	}
	if errW == nil && (!bytes.Equal(w, want) || !bytes.Equal(c, want)) {
		t.Fatalf("read back other bytes than written")
	}
}

// readStored reads the file whose stored bytes are stored, whole.
func readStored(e *Engine, stored []byte) ([]byte, error) {
	f, err := e.OpenAt(NewMemBackingFrom(stored), testPlace)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f)
}

// forget empties the memo.
func (rm *rootMemo) forget() {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	clear(rm.m)
}
