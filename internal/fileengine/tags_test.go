package fileengine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// TestIsZero: isZero finds one non-zero byte anywhere in a buffer of an
// entry's, a tag block's or a longer size, and takes all zeros (and an
// empty buffer) for zero.
func TestIsZero(t *testing.T) {
	for _, n := range []int{0, 1, content.TagSize, content.TagBlockSize - 1, content.TagBlockSize, content.TagBlockSize + 1, 3*content.TagBlockSize + 5} {
		b := make([]byte, n)
		if !isZero(b) {
			t.Fatalf("%d zeros: not zero", n)
		}
		for _, at := range []int{0, n / 2, n - 1} {
			if at < 0 || at >= n {
				continue
			}
			b[at] = 0x80
			if isZero(b) {
				t.Fatalf("%d bytes, byte %d set: zero", n, at)
			}
			b[at] = 0
		}
	}
}

// TestTagTableBound: through a random mix of what changes a table (entries
// set by a write or a window of writes, cleared, cut, loaded), every
// block's entries from its bound on stay zero, and hashes gives, under
// both rules, the leaves of the blocks hashed whole, dropping the blocks
// that became all zero: the bound only shortens the scans.
func TestTagTableBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const chunks = 3 * content.TagEntries
	for run := range 200 {
		var tt tagTable
		model := make([]byte, chunks*content.TagSize) // every entry, as it should be
		tag := func() []byte {
			e := make([]byte, content.TagSize)
			e[rng.IntN(content.TagSize)] = byte(1 + rng.IntN(255))
			return e
		}
		for step := range 40 {
			switch op := rng.IntN(10); {
			case op < 5: // a write of a window of chunks in one block
				first := rng.Uint64N(chunks)
				last := min(first+rng.Uint64N(20), (first/content.TagEntries+1)*content.TagEntries-1)
				tt.blockFor(first, last)
				for i := first; i <= last; i++ {
					e := tag()
					tt.set(i, e)
					copy(model[i*content.TagSize:], e)
				}
			case op < 7: // a hole punched
				first := rng.Uint64N(chunks)
				end := min(first+rng.Uint64N(300), chunks)
				tt.clear(first, end)
				clear(model[first*content.TagSize : end*content.TagSize])
			case op < 8: // a truncate
				n := rng.Uint64N(chunks + 1)
				tt.cut(n)
				clear(model[n*content.TagSize:])
			default: // a block read back from the backing file
				g := rng.Uint64N(chunks / content.TagEntries)
				block := model[g*content.TagBlockSize : (g+1)*content.TagBlockSize]
				if rng.IntN(2) == 0 {
					clear(block)
					for i := range rng.IntN(30) {
						copy(block[i*content.TagSize:], tag())
					}
				}
				tt.load(g, block)
			}
			for g, b := range tt.blocks.all() {
				if !isZero(b.entries[int(b.top)*content.TagSize:]) {
					t.Fatalf("run %d step %d: block %d has a non-zero entry past its bound %d", run, step, g, b.top)
				}
			}
			for _, l := range []content.Leaves{content.WholeLeaves, content.TrimmedLeaves} {
				var want []content.BlockHash
				for g := range uint64(chunks / content.TagEntries) {
					block := model[g*content.TagBlockSize : (g+1)*content.TagBlockSize]
					if !isZero(block) {
						want = append(want, content.BlockHash{Index: g, Hash: l.Hash(block)})
					}
				}
				if got := tt.hashes(nil, chunks/content.TagEntries, l); !slices.Equal(got, want) {
					t.Fatalf("run %d step %d, rule %d: hashes\n%x\nwant\n%x", run, step, l, got, want)
				}
			}
		}
	}
}
