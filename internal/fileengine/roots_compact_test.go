package fileengine

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// TestCompactRootsSuite runs the roots tests again on the compact layout
// (CompactRoots): the same guarantees, other offsets.
func TestCompactRootsSuite(t *testing.T) {
	compactRoots = true
	defer func() { compactRoots = false }()
	for name, test := range map[string]func(*testing.T){
		"Model": TestRootsModel, "Tamper": TestRootsTamper, "DirtyReplay": TestRootsDirtyReplay,
		"CrashStates": TestRootsCrashStates, "HeaderFields": TestRootsHeaderFields,
		"LargeRequests": TestRootsLargeRequests, "ImplicitPathNoSync": TestRootsImplicitPathNoSync,
		"HugeRepairAndPunch": TestRootsHugeRepairAndPunch,
	} {
		t.Run(name, test)
	}
}

// newCompactEngine is a compact roots engine with 4 KiB chunks.
func newCompactEngine(t *testing.T, alg content.Algorithm, opts Options) *Engine {
	t.Helper()
	compactRoots = true
	defer func() { compactRoots = false }()
	return newRootsEngine(t, alg, 4<<10, opts)
}

// TestCompactSmallFiles: in the compact layout a file of one chunk is
// the header and the chunk (a 1-byte file: 161 bytes with AES-GCM, no
// tag block), grows to 2 chunks with piece A of tag block 0 after chunk
// 0, to 17 with piece B, and truncates back, reading verified and clean
// after every close.
func TestCompactSmallFiles(t *testing.T) {
	const cs = 4 << 10
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			e := newCompactEngine(t, alg, sequential(11))
			r := rand.New(rand.NewPCG(11, 11))
			ov := int64(e.overhead)
			one := []byte{'x'}
			m := rootsFile(t, e, one)
			if got, want := int64(len(m.Bytes())), e.lay.header+1+ov; got != want || got > 256 {
				t.Fatalf("1-byte file: %d bytes, want %d (<= 256)", got, want)
			}
			readBack(t, e, m, one)
			full := randomBytes(r, cs)
			m = rootsFile(t, e, full)
			if got := int64(len(m.Bytes())); got != e.lay.header+int64(e.cipherChunk) {
				t.Fatalf("1-chunk file: %d bytes, want header and chunk only", got)
			}
			readBack(t, e, m, full)
			model := bytes.Clone(full)
			for _, size := range []int64{cs + 1, 2 * cs, 16 * cs, 16*cs + 1, 20 * cs, 300 * cs, 17 * cs, 16 * cs, 3 * cs, cs + 5, cs, 7, 0, 5, 2*cs + 3} {
				f := openRoots(t, e, m)
				old := int64(len(model))
				if size > old {
					p := randomBytes(r, int(size-old))
					mustWrite(t, f, p, old)
					model = append(model, p...)
				} else if err := f.Truncate(size); err != nil {
					t.Fatalf("Truncate(%d): %v", size, err)
				} else {
					model = model[:size]
				}
				mustClose(t, f)
				if got, want := int64(len(m.Bytes())), e.lay.cipherSize(size); got != want && size > 0 {
					t.Fatalf("size %d: backing %d bytes, want %d", size, got, want)
				}
				readBack(t, e, m, model)
			}
		})
	}
}

// TestCompactModel is TestRootsModel on small files: random writes,
// truncates and punches of files of 0..20 chunks, where the pieces of
// tag block 0 come and go.
func TestCompactModel(t *testing.T) {
	const cs = 4 << 10
	for _, alg := range testAlgorithms {
		for _, par := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/parallel=%v", alg, par), func(t *testing.T) {
				opts := sequential(13)
				if par {
					opts = parallel(13)
				}
				e := newCompactEngine(t, alg, opts)
				r := rand.New(rand.NewPCG(13, uint64(len(alg))))
				m := NewMemBacking()
				var model []byte
				f := openRoots(t, e, m)
				const maxSize = 20*cs + 99
				for step := range 300 {
					switch op := r.IntN(10); {
					case op < 5:
						off := r.Int64N(maxSize)
						p := randomBytes(r, r.IntN(5*cs))
						mustWrite(t, f, p, off)
						if end := off + int64(len(p)); end > int64(len(model)) {
							model = append(model, make([]byte, end-int64(len(model)))...)
						}
						copy(model[off:], p)
					case op < 7:
						size := r.Int64N(maxSize)
						if r.IntN(3) == 0 {
							size = r.Int64N(2 * cs)
						}
						if err := f.Truncate(size); err != nil {
							t.Fatalf("step %d: Truncate(%d): %v", step, size, err)
						}
						if size < int64(len(model)) {
							model = model[:size]
						} else {
							model = append(model, make([]byte, size-int64(len(model)))...)
						}
					case op < 8 && len(model) > 0:
						off := r.Int64N(int64(len(model)))
						n := r.Int64N(int64(len(model))-off) + 1
						if err := f.PunchHole(off, n); err != nil {
							t.Fatalf("step %d: PunchHole: %v", step, err)
						}
						clear(model[off : off+n])
					case op < 9:
						if err := f.Sync(); err != nil {
							t.Fatalf("step %d: Sync: %v", step, err)
						}
					default:
						mustClose(t, f)
						readBack(t, e, m, model)
						if want := e.lay.cipherSize(int64(len(model))); int64(len(m.Bytes())) != max(want, e.lay.header) && len(m.Bytes()) > 0 {
							t.Fatalf("step %d: backing is %d bytes, want %d", step, len(m.Bytes()), want)
						}
						f = openRoots(t, e, m)
					}
					got, err := readAll(f)
					if err != nil {
						t.Fatalf("step %d: read: %v", step, err)
					}
					if !bytes.Equal(got, model) {
						t.Fatalf("step %d: read %d bytes, model has %d (or contents differ)", step, len(got), len(model))
					}
				}
				mustClose(t, f)
				readBack(t, e, m, model)
			})
		}
	}
}

// TestCompactTamperOneChunk: a file of one chunk has no tag block, and is
// still authenticated as a whole: its root is over chunk 0's tag. Chunk
// 0 from an older version, chunk 0 zeroed, and the file cut to its header
// all fail (on the layout without roots they read).
func TestCompactTamperOneChunk(t *testing.T) {
	const cs = 4 << 10
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			e := newCompactEngine(t, alg, sequential(12))
			r := rand.New(rand.NewPCG(12, 12))
			plain := randomBytes(r, 3000)
			m := rootsFile(t, e, plain)
			old := bytes.Clone(m.Bytes())
			newer := bytes.Clone(plain)
			copy(newer[10:], "newer")
			rewrite(t, e, m, newer[10:15], 10)
			readBack(t, e, m, newer)
			stored := bytes.Clone(m.Bytes())
			if len(stored) != len(old) {
				t.Fatalf("rewrite changed the size: %d, %d", len(stored), len(old))
			}
			t.Run("older chunk 0", func(t *testing.T) {
				bad := bytes.Clone(stored)
				copy(bad[e.lay.header:], old[e.lay.header:])
				wantRootsError(t, e, bad, newer)
			})
			t.Run("chunk 0 zeroed", func(t *testing.T) {
				bad := bytes.Clone(stored)
				clear(bad[e.lay.header:])
				wantRootsError(t, e, bad, newer)
			})
			t.Run("cut to header", func(t *testing.T) {
				wantRootsError(t, e, stored[:e.lay.header], newer)
			})
			t.Run("two chunks, older chunk 0", func(t *testing.T) {
				two := randomBytes(r, cs+100)
				m := rootsFile(t, e, two)
				old := bytes.Clone(m.Bytes())
				newer := bytes.Clone(two)
				copy(newer, "newer")
				rewrite(t, e, m, newer[:5], 0)
				bad := bytes.Clone(m.Bytes())
				copy(bad[e.cipherOffset(0):e.cipherOffset(0)+int64(e.cipherChunk)], old[e.cipherOffset(0):])
				wantRootsError(t, e, bad, newer)
			})
		})
	}
}

// TestCompactOneChunkReadOnce: the first read of a clean file of one
// chunk checks its root from the chunk (its tag is the file's only
// entry) and keeps the plaintext it opened for the read, so the open and
// the read cost two backing reads (header, chunk), not three; a chunk
// whose body was damaged still fails the read.
func TestCompactOneChunkReadOnce(t *testing.T) {
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			e := newCompactEngine(t, alg, sequential(13))
			plain := randomBytes(rand.New(rand.NewPCG(13, 13)), 3000)
			m := rootsFile(t, e, plain)
			r0, _ := m.Counts()
			f := openRoots(t, e, m)
			got, err := readAll(f)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("read: %v (%d bytes, want %d)", err, len(got), len(plain))
			}
			mustClose(t, f)
			if r1, _ := m.Counts(); r1-r0 != 2 {
				t.Fatalf("open and read of a 1-chunk file: %d backing reads, want 2 (header, chunk)", r1-r0)
			}
			bad := bytes.Clone(m.Bytes())
			bad[e.lay.header+int64(e.nonceSize)] ^= 1 // the body, not the tag
			f = openRoots(t, e, NewMemBackingFrom(bad))
			defer mustClose(t, f)
			if _, err := readAll(f); !isAuthError(err) {
				t.Fatalf("read of a damaged chunk: %v, want an authentication error", err)
			}
		})
	}
}

// seekCounter is a MemBacking that counts SeekData calls.
type seekCounter struct {
	*MemBacking
	seeks int
}

func (s *seekCounter) SeekData(off int64) (int64, error) {
	s.seeks++
	return s.MemBacking.SeekData(off)
}

// TestCompactSmallFileNoSeek: loading the roots of a file of one group
// reads its tag block (or pieces) without asking the backing where its
// data is (two lseeks per open of a small file).
func TestCompactSmallFileNoSeek(t *testing.T) {
	const cs = 4 << 10
	e := newCompactEngine(t, content.AES256GCM, sequential(14))
	r := rand.New(rand.NewPCG(14, 14))
	for _, size := range []int{1, cs, 3*cs + 7, 40 * cs} {
		plain := randomBytes(r, size)
		sc := &seekCounter{MemBacking: rootsFile(t, e, plain)}
		f, err := e.OpenAt(sc, testPlace)
		if err != nil {
			t.Fatalf("OpenAt: %v", err)
		}
		got, err := readAll(f)
		mustClose(t, f)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("%d bytes: read %v", size, err)
		}
		if sc.seeks != 0 {
			t.Fatalf("%d bytes (one group): %d SeekData calls, want 0", size, sc.seeks)
		}
	}
}

// TestCompactReadAcrossPieces: a read across chunks 0 and 1 (piece A of
// tag block 0 between them) and across 15 and 16 (piece B) is one backing
// read, as in the other layouts, and the roots of the first read are
// loaded from it (fileRoots.firstRead): the open and a whole read of a
// 2-chunk or a 17-chunk file cost the header and one read of the chunks
// with the pieces between them (before, the pieces were read first).
func TestCompactReadAcrossPieces(t *testing.T) {
	const cs = 4 << 10
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			e := newCompactEngine(t, alg, sequential(15))
			r := rand.New(rand.NewPCG(15, 15))
			for _, size := range []int{cs + 100, 17*cs + 5} {
				plain := randomBytes(r, size)
				m := rootsFile(t, e, plain)
				r0, _ := m.Counts()
				f := openRoots(t, e, m)
				got := make([]byte, size)
				if n, err := f.ReadAt(got, 0); n != size || err != nil && err != io.EOF {
					t.Fatalf("%d bytes: read %d, %v", size, n, err)
				}
				mustClose(t, f)
				if !bytes.Equal(got, plain) {
					t.Fatalf("%d bytes: read back differs", size)
				}
				const want = 2 // header, the chunks and the pieces between them
				if r1, _ := m.Counts(); r1-r0 != want {
					t.Fatalf("%d bytes: open and read cost %d backing reads, want %d", size, r1-r0, want)
				}
			}
		})
	}
}

// TestCompactWriteAcrossPieces: a new file written in one request across
// the pieces of tag block 0 costs two backing writes: the DIRTY header
// with the chunks and the pieces between them (their entries from the
// table), the clean header at close; it reads back verified and clean.
func TestCompactWriteAcrossPieces(t *testing.T) {
	const cs = 4 << 10
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			e := newCompactEngine(t, alg, sequential(16))
			r := rand.New(rand.NewPCG(16, 16))
			for _, size := range []int{cs + 100, 17*cs + 5} {
				plain := randomBytes(r, size)
				m := NewMemBacking()
				f := openRoots(t, e, m)
				mustWrite(t, f, plain, 0)
				mustClose(t, f)
				if _, w := m.Counts(); w != 2 {
					t.Fatalf("%d bytes in one write: %d backing writes, want 2", size, w)
				}
				readBack(t, e, m, plain)
			}
		})
	}
}

// TestCompactFirstReadPieces: the first read of a clean compact file
// loads its roots from the pieces of tag block 0 it read with the chunks
// (fileRoots.firstRead) only when it spans them, and checks them as a
// separate read of the pieces did: a first read that starts past chunk 0
// reads the pieces on their own (with the header and the chunk, 3
// backing reads, 4 with piece B), a piece A
// from an older version (with or without the chunk 1 it names) or a
// damaged piece B fails the first whole read with no byte delivered, and
// so does a damaged chunk 1.
func TestCompactFirstReadPieces(t *testing.T) {
	const cs = 4 << 10
	e := newCompactEngine(t, content.AES256GCM, sequential(17))
	r := rand.New(rand.NewPCG(17, 17))
	for _, size := range []int{2*cs + 9, 17*cs + 5} {
		plain := randomBytes(r, size)
		m := rootsFile(t, e, plain)
		stored := bytes.Clone(m.Bytes())

		r0, _ := m.Counts()
		f := openRoots(t, e, m)
		got := make([]byte, 100)
		if n, err := f.ReadAt(got, cs+10); n != len(got) || err != nil {
			t.Fatalf("%d bytes: read in chunk 1: %d, %v", size, n, err)
		}
		if !bytes.Equal(got, plain[cs+10:cs+110]) {
			t.Fatalf("%d bytes: read in chunk 1 differs", size)
		}
		mustClose(t, f)
		want := int64(3) // header, piece A, chunk 1
		if size > 16*cs {
			want = 4 // and piece B
		}
		if r1, _ := m.Counts(); int64(r1-r0) != want {
			t.Fatalf("%d bytes: open and read in chunk 1: %d backing reads, want %d", size, r1-r0, want)
		}

		// A newer version of chunk 1, so that the old pieces name the
		// old chunk 1.
		newer := bytes.Clone(plain)
		copy(newer[cs:], "newer")
		rewrite(t, e, m, newer[cs:cs+5], cs)
		readBack(t, e, m, newer)
		now := bytes.Clone(m.Bytes())
		l := e.lay
		t.Run("older piece A", func(t *testing.T) {
			bad := bytes.Clone(now)
			copy(bad[l.pieceA:l.pieceA+content.CompactHeadEntries*content.TagSize], stored[l.pieceA:])
			wantRootsError(t, e, bad, newer)
		})
		t.Run("older piece A and chunk 1", func(t *testing.T) {
			// Each chunk matches its entry: only the root tells.
			bad := bytes.Clone(now)
			c1 := e.cipherOffset(1)
			copy(bad[l.pieceA:c1+int64(e.cipherChunk)], stored[l.pieceA:])
			wantRootsError(t, e, bad, newer)
		})
		t.Run("damaged chunk 1", func(t *testing.T) {
			bad := bytes.Clone(now)
			bad[e.cipherOffset(1)+int64(e.nonceSize)] ^= 1
			wantRootsError(t, e, bad, newer)
		})
		if size > 16*cs {
			t.Run("damaged piece B", func(t *testing.T) {
				bad := bytes.Clone(now)
				bad[l.pieceB] ^= 1
				wantRootsError(t, e, bad, newer)
			})
		}
	}
}

// TestCompactNewFileHeaderWithChunk0: the first write of a new file
// from chunk 0 that leaves it longer than one chunk stores its DIRTY
// header in the same backing write as the chunks, right before them
// (fileRoots.newWithChunk0): what a crash keeps before the close is
// DIRTY and reads with v1's rules. A second write adds its chunk only; a
// first write past chunk 0 writes the header first, alone. The combined
// write torn after the header fails as a whole. (A file that stays one
// chunk long has its first write held: TestHeldFirstWrite.)
func TestCompactNewFileHeaderWithChunk0(t *testing.T) {
	const cs = 4 << 10
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			e := newCompactEngine(t, alg, sequential(18))
			r := rand.New(rand.NewPCG(18, 18))
			for _, size := range []int{cs + 1, 3*cs + 7} {
				plain := randomBytes(r, size)
				m := NewMemBacking()
				f := openRoots(t, e, m)
				mustWrite(t, f, plain, 0)
				if _, w := m.Counts(); w != 1 {
					t.Fatalf("%d bytes: first write: %d backing writes, want 1 (header and chunks)", size, w)
				}
				// A crash now keeps what was written: DIRTY, it reads.
				g := openRoots(t, e, NewMemBackingFrom(bytes.Clone(m.Bytes())))
				if !g.RootDirty() {
					t.Fatalf("%d bytes: not DIRTY before the close", size)
				}
				if got, err := readAll(g); err != nil || !bytes.Equal(got, plain) {
					t.Fatalf("%d bytes: DIRTY file reads %d bytes, %v", size, len(got), err)
				}
				mustClose(t, g)
				torn := bytes.Clone(m.Bytes())[:e.lay.header+100]
				if g, err := e.OpenAt(NewMemBackingFrom(torn), testPlace); err == nil {
					if _, err := readAll(g); err == nil {
						t.Fatalf("%d bytes: a write torn after the header reads", size)
					}
					g.Close()
				}

				more := randomBytes(r, 500)
				mustWrite(t, f, more, int64(len(plain)))
				plain = append(plain, more...)
				mustClose(t, f)
				// Header and chunks, the appended chunk, the entries of the
				// pieces of block 0, the clean header.
				want := 4
				if _, w := m.Counts(); w != want {
					t.Fatalf("%d bytes: two writes and a close: %d backing writes, want %d", size, w, want)
				}
				readBack(t, e, m, plain)
			}

			// A first write past chunk 0: the header alone first.
			m := NewMemBacking()
			f := openRoots(t, e, m)
			mustWrite(t, f, []byte("tail"), 2*cs)
			if _, w := m.Counts(); w != 2 {
				t.Fatalf("first write in chunk 2: %d backing writes, want 2 (header, chunk)", w)
			}
			mustClose(t, f)
			readBack(t, e, m, append(make([]byte, 2*cs), "tail"...))
		})
	}
}

// failingWrite is a MemBacking whose next write, once armed, stores its
// second half only and fails: a write that reached the chunk, not the
// header before it.
type failingWrite struct {
	*MemBacking
	armed bool
}

func (b *failingWrite) WriteAt(p []byte, off int64) (int, error) {
	if !b.armed {
		return b.MemBacking.WriteAt(p, off)
	}
	b.armed = false
	b.MemBacking.WriteAt(p[len(p)/2:], off+int64(len(p)/2))
	return 0, syscall.EIO
}

// TestCompactDirtyWithChunk0: a change to a clean file whose first
// backing write starts at chunk 0 carries the DIRTY header in that write
// (one backing write, then the clean header at the close); if that write
// fails, the DIRTY header is written on its own, so the file is DIRTY
// (its chunks read with v1's rules, fsck dirty-root) whatever part of the
// write was stored, as when the header went first.
func TestCompactDirtyWithChunk0(t *testing.T) {
	const cs = 4 << 10
	e := newCompactEngine(t, content.AES256GCM, sequential(19))
	r := rand.New(rand.NewPCG(19, 19))
	for _, size := range []int{3000, 3*cs + 5} {
		plain := randomBytes(r, size)
		m := rootsFile(t, e, plain)
		_, w0 := m.Counts()
		f := openRoots(t, e, m)
		mustWrite(t, f, []byte("new"), 10)
		copy(plain[10:], "new")
		if _, w := m.Counts(); w-w0 != 1 {
			t.Fatalf("%d bytes: a change of chunk 0: %d backing writes, want 1 (DIRTY header and chunk)", size, w-w0)
		}
		if g := openRoots(t, e, NewMemBackingFrom(bytes.Clone(m.Bytes()))); !g.RootDirty() {
			t.Fatalf("%d bytes: not DIRTY after a change, before the close", size)
		}
		mustClose(t, f)
		readBack(t, e, m, plain)

		fw := &failingWrite{MemBacking: m}
		f, err := e.OpenAt(fw, testPlace)
		if err != nil {
			t.Fatalf("OpenAt: %v", err)
		}
		fw.armed = true
		if _, err := f.WriteAt([]byte("lost"), 20); err == nil {
			t.Fatalf("%d bytes: the failing write succeeded", size)
		}
		g := openRoots(t, e, NewMemBackingFrom(bytes.Clone(m.Bytes())))
		if !g.RootDirty() {
			t.Fatalf("%d bytes: a failed change of chunk 0 left the file clean", size)
		}
		mustClose(t, g)
		f.Close()
	}
}
