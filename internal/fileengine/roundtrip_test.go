package fileengine

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// TestRoundTrip writes files of the boundary sizes in one request and in
// odd-sized pieces, with the bulk path on and off, and reads them back
// through a fresh File.
func TestRoundTrip(t *testing.T) {
	for _, alg := range testAlgorithms {
		for _, cs := range []int{4 << 10, 64 << 10, 1 << 20} {
			suite := newTestSuite(t, alg, cs)
			sizes := []int{0, 1, cs - 1, cs, cs + 1, 3*cs + 7}
			for _, size := range sizes {
				for _, mode := range []string{"seq", "par"} {
					// Small pieces re-seal a whole chunk per write: with 1 MiB
					// chunks use bigger (still unaligned) pieces to stay fast.
					pieces := []int{0, 3001}
					if cs > 64<<10 {
						pieces = []int{0, cs/3 + 1}
						if alg != content.AES256GCM || mode == "par" {
							pieces = pieces[:1]
						}
					}
					for _, piece := range pieces {
						name := fmt.Sprintf("%s/chunk%d/size%d/%s/piece%d", alg, cs, size, mode, piece)
						t.Run(name, func(t *testing.T) {
							opts := sequential(1)
							if mode == "par" {
								opts = parallel(1)
							}
							roundTrip(t, NewEngine(suite, opts), size, piece)
						})
					}
				}
			}
		}
	}
}

func roundTrip(t *testing.T, e *Engine, size, piece int) {
	r := rand.New(rand.NewPCG(uint64(size), uint64(piece)))
	want := randomBytes(r, size)
	m := NewMemBacking()
	f := openMem(t, e, m)
	if piece == 0 {
		if size > 0 {
			mustWrite(t, f, want, 0)
		}
	} else {
		for off := 0; off < size; off += piece {
			mustWrite(t, f, want[off:min(off+piece, size)], int64(off))
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := int64(len(m.Bytes())), e.Suite().CipherSize(int64(size)); got != want {
		t.Fatalf("backing size %d, want %d", got, want)
	}

	f = openMem(t, e, m)
	defer f.Close()
	if got, _ := f.Size(); got != int64(size) {
		t.Fatalf("Size = %d, want %d", got, size)
	}
	got, err := readAll(f)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read back differs")
	}
	// Unaligned reads crossing chunk edges, and reads at and past EOF.
	cs := e.Suite().ChunkSize()
	for _, off := range []int{0, 1, cs - 1, cs, cs + 1, size - 1, size} {
		if off < 0 || off > size {
			continue
		}
		buf := make([]byte, cs+2)
		n, err := f.ReadAt(buf, int64(off))
		wantN := min(len(buf), size-off)
		if n != wantN || (wantN < len(buf) && err != io.EOF) || (wantN == len(buf) && err != nil) {
			t.Fatalf("ReadAt(%d) = %d, %v; want %d", off, n, err, wantN)
		}
		if !bytes.Equal(buf[:n], want[off:off+n]) {
			t.Fatalf("ReadAt(%d) returned wrong bytes", off)
		}
	}
}

// TestOneBackingIOPerRequest checks that a write of many chunks is a single
// backing write and a read a single backing read, and that appends do not
// read the old last chunk back (the tail cache).
func TestOneBackingIOPerRequest(t *testing.T) {
	suite := newTestSuite(t, content.AES256GCM, 4<<10)
	for _, opts := range []Options{sequential(2), parallel(2)} {
		e := NewEngine(suite, opts)
		m := NewMemBacking()
		f := openMem(t, e, m)
		data := randomBytes(rand.New(rand.NewPCG(1, 2)), 10<<10)
		mustWrite(t, f, data, 0) // header + one run
		r0, w0 := m.Counts()
		for i := 1; i < 20; i++ { // tar-like 10 KiB appends
			mustWrite(t, f, data, int64(i*len(data)))
		}
		r1, w1 := m.Counts()
		if r1 != r0 || w1-w0 != 19 {
			t.Fatalf("19 appends cost %d reads and %d writes, want 0 and 19", r1-r0, w1-w0)
		}
		buf := make([]byte, 50<<10)
		if _, err := f.ReadAt(buf, 3); err != nil {
			t.Fatal(err)
		}
		if r2, _ := m.Counts(); r2 != r1+1 {
			t.Fatalf("a 50 KiB read cost %d backing reads, want 1", r2-r1)
		}
		f.Close()
	}
}

// TestWriteAllocs checks the steady-state allocation count of a 1 MiB write.
func TestWriteAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under -race")
	}
	suite := newTestSuite(t, content.AES256GCM, 64<<10)
	for _, opts := range []Options{sequential(3), parallel(3)} {
		e := NewEngine(suite, opts)
		f := openMem(t, e, NewMemBacking())
		data := make([]byte, 1<<20)
		mustWrite(t, f, data, 0)
		allocs := testing.AllocsPerRun(20, func() {
			mustWrite(t, f, data, 0)
		})
		t.Logf("parallel=%v: 1 MiB WriteAt: %.1f allocs", opts.Parallel.Enabled, allocs)
		// Parallel: one goroutine closure per helper; sequential: none expected.
		if allocs > 6 {
			t.Errorf("parallel=%v: a 1 MiB WriteAt makes %.1f allocations, want <= 6", opts.Parallel.Enabled, allocs)
		}
		buf := make([]byte, 1<<20)
		allocs = testing.AllocsPerRun(20, func() {
			if _, err := f.ReadAt(buf, 0); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("parallel=%v: 1 MiB ReadAt: %.1f allocs", opts.Parallel.Enabled, allocs)
		if allocs > 6 {
			t.Errorf("parallel=%v: a 1 MiB ReadAt makes %.1f allocations, want <= 6", opts.Parallel.Enabled, allocs)
		}
	}
}
