package fileengine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// readTampered opens stored and reads the whole file; it fails the test
// unless the damage is reported with a content sentinel and no wrong byte
// is delivered. want is the true plaintext.
func readTampered(t *testing.T, e *Engine, stored, want []byte) {
	t.Helper()
	f, err := e.Open(NewMemBackingFrom(stored))
	if err != nil {
		if !isAuthError(err) {
			t.Fatalf("Open: unexpected error %v", err)
		}
		return
	}
	defer f.Close()
	size, _ := f.Size()
	buf := make([]byte, max(size, int64(len(want))))
	n, err := f.ReadAt(buf, 0)
	if err == nil || !isAuthError(err) {
		t.Fatalf("read of tampered file: n=%d err=%v, want an authentication error", n, err)
	}
	checkNoGarbage(t, buf, n, want, 0)
}

// writeFile makes a file with the given plaintext in one write.
func writeFile(t testing.TB, e *Engine, plain []byte) *MemBacking {
	t.Helper()
	m := NewMemBacking()
	f := openMem(t, e, m)
	mustWrite(t, f, plain, 0)
	f.Close()
	return m
}

// TestFlipEveryByte flips each byte of a small two-chunk file in turn
// (header, nonces, bodies, tags): every flip must make the open or the read fail.
func TestFlipEveryByte(t *testing.T) {
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			e := NewEngine(newTestSuite(t, alg, 4<<10), sequential(7))
			plain := randomBytes(rand.New(rand.NewPCG(7, 7)), 4<<10+100)
			orig := writeFile(t, e, plain).Bytes()
			for i := range orig {
				stored := bytes.Clone(orig)
				stored[i] ^= 1 << (i % 8) // every bit position is hit across bytes
				readTampered(t, e, stored, plain)
			}
		})
	}
}

// TestStructuralTampering covers chunk swaps, moves between files,
// truncation at a chunk boundary and appended chunks.
func TestStructuralTampering(t *testing.T) {
	const cs = 4 << 10
	for _, alg := range testAlgorithms {
		suite := newTestSuite(t, alg, cs)
		e := NewEngine(suite, sequential(8))
		ccs := suite.CipherChunkSize()
		chunk := func(b []byte, i int) []byte {
			return bytes.Clone(b[content.HeaderSize+i*ccs : content.HeaderSize+(i+1)*ccs])
		}
		r := rand.New(rand.NewPCG(8, 8))
		plain := randomBytes(r, 4*cs) // 4 full chunks
		orig := writeFile(t, e, plain).Bytes()
		other := writeFile(t, e, randomBytes(r, 4*cs)).Bytes()

		// An old state of the same file: 5 chunks, then truncated to 4.
		m := NewMemBacking()
		f := openMem(t, e, m)
		mustWrite(t, f, randomBytes(r, 5*cs), 0)
		fiveChunks := m.Bytes()
		if err := f.Truncate(4 * cs); err != nil {
			t.Fatal(err)
		}
		fourChunks := m.Bytes()
		fourPlain, _ := readAll(f)
		f.Close()

		cases := []struct {
			name   string
			stored []byte
			want   []byte
		}{
			{"swap chunks 1 and 2", func() []byte {
				b := bytes.Clone(orig)
				c1, c2 := chunk(orig, 1), chunk(orig, 2)
				copy(b[content.HeaderSize+ccs:], c2)
				copy(b[content.HeaderSize+2*ccs:], c1)
				return b
			}(), plain},
			{"chunk 1 from another file", func() []byte {
				b := bytes.Clone(orig)
				copy(b[content.HeaderSize+ccs:], chunk(other, 1))
				return b
			}(), plain},
			{"header from another file", func() []byte {
				b := bytes.Clone(orig)
				copy(b, other[:content.HeaderSize])
				return b
			}(), plain},
			{"truncated at a chunk boundary", orig[:content.HeaderSize+3*ccs], plain},
			{"foreign chunk appended", append(bytes.Clone(orig), chunk(other, 3)...), plain},
			{"own last chunk appended again", append(bytes.Clone(orig), chunk(orig, 3)...), plain},
			{"old final chunk 4 appended after truncate", append(bytes.Clone(fourChunks), chunk(fiveChunks, 4)...), fourPlain},
			{"chunk 1 zeroed in a dense file", func() []byte {
				b := bytes.Clone(orig)
				clear(b[content.HeaderSize+ccs : content.HeaderSize+2*ccs])
				return b
			}(), plain},
			{"header-only (all chunks dropped)", orig[:content.HeaderSize], nil},
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%s", alg, tc.name), func(t *testing.T) {
				if tc.want == nil {
					// Dropping every chunk cannot be detected by the format (a
					// header-only file is a valid empty file); document that.
					f, err := e.Open(NewMemBackingFrom(tc.stored))
					if err != nil {
						t.Fatal(err)
					}
					if size, _ := f.Size(); size != 0 {
						t.Fatalf("size %d", size)
					}
					return
				}
				readTampered(t, e, tc.stored, tc.want)
			})
		}
	}
}

// TestZeroChunkSparseVsDense: an all-zero non-final chunk reads as zeros in
// a SPARSE file (a hole: the documented residual risk) and is an error in a
// dense file; a zeroed last chunk is an error in both.
func TestZeroChunkSparseVsDense(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	e := NewEngine(suite, sequential(9))
	ccs := suite.CipherChunkSize()
	r := rand.New(rand.NewPCG(9, 9))
	plain := randomBytes(r, 3*cs+10)

	dense := writeFile(t, e, plain).Bytes()
	m := NewMemBacking()
	f := openMem(t, e, m)
	mustWrite(t, f, plain, 0)
	if err := f.PunchHole(int64(2*cs), 1); err != nil { // partial: sets nothing
		t.Fatal(err)
	}
	if err := f.Truncate(5*cs + 10); err != nil { // grow with holes: sets SPARSE
		t.Fatal(err)
	}
	sparse := m.Bytes()
	sparsePlain, err := readAll(f)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()

	zeroChunk := func(b []byte, i int) []byte {
		b = bytes.Clone(b)
		clear(b[content.HeaderSize+i*ccs : min(len(b), content.HeaderSize+(i+1)*ccs)])
		return b
	}
	t.Run("dense middle", func(t *testing.T) { readTampered(t, e, zeroChunk(dense, 1), plain) })
	t.Run("dense last", func(t *testing.T) { readTampered(t, e, zeroChunk(dense, 3), plain) })
	t.Run("sparse last", func(t *testing.T) { readTampered(t, e, zeroChunk(sparse, 5), sparsePlain) })
	t.Run("sparse middle reads zeros", func(t *testing.T) {
		f := openMem(t, e, NewMemBackingFrom(zeroChunk(sparse, 1)))
		got, err := readAll(f)
		if err != nil {
			t.Fatal(err)
		}
		want := bytes.Clone(sparsePlain)
		clear(want[cs : 2*cs])
		if !bytes.Equal(got, want) {
			t.Fatal("hole did not read as zeros")
		}
	})
}

// TestGarbageBacking: impossible sizes and random bytes give errors, never
// panics.
func TestGarbageBacking(t *testing.T) {
	suite := newTestSuite(t, content.AES256GCM, 4<<10)
	e := NewEngine(suite, sequential(10))
	r := rand.New(rand.NewPCG(10, 10))
	valid := writeFile(t, e, randomBytes(r, 5000)).Bytes()
	for n := 1; n < content.HeaderSize; n++ {
		if _, err := e.Open(NewMemBackingFrom(valid[:n])); !errors.Is(err, content.ErrTruncated) {
			t.Fatalf("backing of %d bytes: %v, want ErrTruncated", n, err)
		}
	}
	if _, err := e.Open(NewMemBackingFrom(randomBytes(r, content.HeaderSize))); !errors.Is(err, content.ErrBadHeader) {
		t.Fatalf("random header: %v, want ErrBadHeader", err)
	}
	for extra := 1; extra <= suite.Overhead(); extra++ {
		b := append(bytes.Clone(valid[:content.HeaderSize+suite.CipherChunkSize()]), make([]byte, extra)...)
		if _, err := e.Open(NewMemBackingFrom(b)); !errors.Is(err, content.ErrTruncated) {
			t.Fatalf("last chunk of %d bytes: %v, want ErrTruncated", extra, err)
		}
	}
	for _, n := range []int{37, 100, 4096, 5000, 9000} {
		b := randomBytes(r, n)
		copy(b, valid[:content.HeaderSize]) // valid header, garbage body
		readTampered(t, e, b, make([]byte, n))
	}
}

// FuzzOpenRead feeds arbitrary backing bytes to Open and ReadAt: errors are
// fine, panics and unauthenticated plaintext are not.
func FuzzOpenRead(f *testing.F) {
	suite := newTestSuite(f, content.AES256GCM, 4<<10)
	e := NewEngine(suite, sequential(11))
	valid := writeFile(f, e, []byte("seed plaintext")).Bytes()
	f.Add(valid, int64(0), 20)
	f.Add(valid[:40], int64(3), 5)
	f.Add([]byte{}, int64(0), 1)
	f.Fuzz(func(t *testing.T, stored []byte, off int64, n int) {
		file, err := e.Open(NewMemBackingFrom(stored))
		if err != nil {
			if !isAuthError(err) {
				t.Fatalf("Open: %v", err)
			}
			return
		}
		defer file.Close()
		if n < 0 || n > 1<<16 || off < 0 {
			return
		}
		buf := make([]byte, n)
		k, err := file.ReadAt(buf, off)
		if err != nil && !isAuthError(err) && k == n {
			t.Fatalf("ReadAt: %v with full count", err)
		}
		if isAuthError(err) {
			for _, c := range buf[k:] {
				if c != 0 {
					t.Fatal("bytes beyond n after a failed read")
				}
			}
		}
	})
}

// TestParallelReadReportsFirstBadChunk: with the bulk path on, a read over
// damaged chunks reports the lowest bad chunk, delivers exactly the chunks
// before it and nothing after.
func TestParallelReadReportsFirstBadChunk(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	e := NewEngine(suite, parallel(18))
	plain := randomBytes(rand.New(rand.NewPCG(18, 18)), 20*cs+5)
	orig := writeFile(t, e, plain).Bytes()
	ccs := suite.CipherChunkSize()
	for _, bad := range [][]int{{0}, {7}, {19, 3}, {20}, {12, 13, 14}} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			stored := bytes.Clone(orig)
			first := bad[0]
			for _, i := range bad {
				stored[content.HeaderSize+i*ccs+20] ^= 0x40
				first = min(first, i)
			}
			f := openMem(t, e, NewMemBackingFrom(stored))
			defer f.Close()
			const off = 100
			buf := make([]byte, len(plain)-off)
			n, err := f.ReadAt(buf, off)
			var ce *ChunkError
			if !errors.Is(err, content.ErrCorruptChunk) || !errors.As(err, &ce) || ce.Index != uint64(first) {
				t.Fatalf("err = %v, want ErrCorruptChunk at chunk %d", err, first)
			}
			if want := max(first*cs-off, 0); n != want {
				t.Fatalf("n = %d, want %d", n, want)
			}
			checkNoGarbage(t, buf, n, plain, off)
		})
	}
}
