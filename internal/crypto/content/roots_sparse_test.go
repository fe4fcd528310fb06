package content

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"time"
)

// TestRootSparseIsRoot: RootSparse equals Root over the full list of
// hashes, for counts around the stack buffer's bound (smallRootBlocks),
// the one-level/two-level switch and partial
// last groups, with blocks in the first, a middle and the last group,
// under both rules (their all-zero blocks differ).
func TestRootSparseIsRoot(t *testing.T) {
	for _, l := range []Leaves{WholeLeaves, TrimmedLeaves} {
		testRootSparseIsRoot(t, l)
	}
}

func testRootSparseIsRoot(t *testing.T, l Leaves) {
	s := rootsSuiteForTest(t)
	var id FileID
	id[0] = 7
	rnd := rand.New(rand.NewPCG(1, 2))
	zl, _ := l.zero()
	for _, count := range []uint64{0, 1, 2, smallRootBlocks, smallRootBlocks + 1, 255, 256, 257, 511, 512, 513, 3*256 + 17, 5 * 256} {
		for _, density := range []int{0, 1, 3, 100} {
			full := repeatHash(zl, int(count))
			var sparse []BlockHash
			for j := range count {
				if density == 0 || rnd.IntN(100) >= density && j != count-1 && j != 0 {
					continue
				}
				var h [sha256.Size]byte
				for b := range h {
					h[b] = byte(rnd.Uint32())
				}
				full[j] = h
				sparse = append(sparse, BlockHash{Index: j, Hash: h})
			}
			want, err := s.Root(l, id, 12345, 6, full)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.RootSparse(l, id, 12345, 6, count, sparse)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("leaves %d, count %d, %d blocks listed: RootSparse differs from Root", l, count, len(sparse))
			}
		}
	}
}

// TestRootSparseRejectsBadLists: a block past count or out of order is an
// error, not a wrong root.
func TestRootSparseRejectsBadLists(t *testing.T) {
	s := rootsSuiteForTest(t)
	for _, blocks := range [][]BlockHash{{{Index: 3}}, {{Index: 1}, {Index: 1}}, {{Index: 2}, {Index: 1}}} {
		if _, err := s.RootSparse(WholeLeaves, FileID{}, 0, 0, 3, blocks); err == nil {
			t.Errorf("%v accepted", blocks)
		}
	}
}

// TestRootSparseAtMax: the root of an empty file of MaxRootsChunks chunks
// with one block at each end stays well under a second (the bound is
// chosen for it; docs/format.md §16).
func TestRootSparseAtMax(t *testing.T) {
	s := rootsSuiteForTest(t)
	count := uint64(MaxRootsChunks / TagEntries)
	blocks := []BlockHash{{Index: 0, Hash: [32]byte{1}}, {Index: count - 1, Hash: [32]byte{2}}}
	t0 := time.Now()
	if _, err := s.RootSparse(WholeLeaves, FileID{}, 1, 1, count, blocks); err != nil {
		t.Fatal(err)
	}
	d := time.Since(t0)
	t.Logf("root of %d tag blocks: %v", count, d)
	if d > 3*time.Second { // generous: -race and a shared 2-core machine
		t.Errorf("root at the maximum size took %v", d)
	}
}

func rootsSuiteForTest(t *testing.T) *Suite {
	t.Helper()
	s, err := NewRootsSuite(AES256GCM, MinChunk, testKey(32, 1), testKey(32, 2))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRootsMaxPlainSize: the largest file with roots is MaxRootsChunks
// chunks at every chunk size, and 1 PiB fits at the smallest.
func TestRootsMaxPlainSize(t *testing.T) {
	for _, cs := range []int{MinChunk, DefaultChunkSize, MaxChunk} {
		s, err := NewRootsSuite(AES256GCM, cs, testKey(32, 1), testKey(32, 2))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.MaxPlainSize(), int64(MaxRootsChunks)*int64(cs); got != want {
			t.Errorf("chunk %d: MaxPlainSize %d, want %d", cs, got, want)
		}
		if s.MaxPlainSize() < 1<<50 || s.CipherSize(s.MaxPlainSize()) <= 0 {
			t.Errorf("chunk %d: MaxPlainSize %d below 1 PiB or overflowing", cs, s.MaxPlainSize())
		}
	}
}
