package fileengine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// model is the reference: a plain byte slice.
type model struct{ data []byte }

func (m *model) writeAt(p []byte, off int64) {
	if len(p) == 0 {
		return // like pwrite: an empty write does not extend the file
	}
	if end := off + int64(len(p)); end > int64(len(m.data)) {
		m.truncate(end)
	}
	copy(m.data[off:], p)
}

func (m *model) truncate(size int64) {
	if size <= int64(len(m.data)) {
		m.data = m.data[:size]
		return
	}
	m.data = append(m.data, make([]byte, size-int64(len(m.data)))...)
}

func (m *model) punch(off, length int64) {
	end := min(off+length, int64(len(m.data)))
	if off < end {
		clear(m.data[off:end])
	}
}

// TestRandomOpsAgainstModel applies seeded random writes, reads, truncates
// and hole punches to a File and to a []byte, compares every read, and
// reopens the file now and then to check what is on the backing.
func TestRandomOpsAgainstModel(t *testing.T) {
	for _, alg := range testAlgorithms {
		for _, cs := range []int{4 << 10, 64 << 10} {
			for _, par := range []bool{false, true} {
				seeds := uint64(3)
				if cs > 4<<10 {
					seeds = 1 // bigger chunks cost more per op; fewer seeds keep -race fast
				}
				for seed := uint64(1); seed <= seeds; seed++ {
					t.Run(fmt.Sprintf("%s/chunk%d/par%v/seed%d", alg, cs, par, seed), func(t *testing.T) {
						opts := sequential(seed)
						if par {
							opts = parallel(seed)
						}
						randomOps(t, NewEngine(newTestSuite(t, alg, cs), opts), seed, 150)
					})
				}
			}
		}
	}
}

func randomOps(t *testing.T, e *Engine, seed uint64, ops int) {
	r := rand.New(rand.NewPCG(seed, 99))
	cs := int64(e.Suite().ChunkSize())
	maxSize := 10 * cs
	// offsets cluster around chunk edges, where the interesting cases are
	randOff := func() int64 {
		switch r.IntN(3) {
		case 0:
			return r.Int64N(maxSize)
		default:
			return r.Int64N(10)*cs + r.Int64N(5) - 2
		}
	}
	randLen := func() int64 {
		switch r.IntN(4) {
		case 0:
			return r.Int64N(16) + 1
		case 1:
			return r.Int64N(3*cs) + 1
		default:
			return r.Int64N(4)*cs + r.Int64N(3) - 1
		}
	}
	var ref model
	m := NewMemBacking()
	f := openMem(t, e, m)
	defer func() { f.Close() }()
	for op := range ops {
		off := max(randOff(), 0)
		n := max(randLen(), 0)
		var desc string
		switch r.IntN(10) {
		case 0, 1, 2, 3:
			desc = fmt.Sprintf("WriteAt(%d bytes at %d)", n, off)
			p := randomBytes(r, int(n))
			if _, err := f.WriteAt(p, off); err != nil {
				t.Fatalf("op %d %s: %v", op, desc, err)
			}
			ref.writeAt(p, off)
		case 4, 5, 6:
			desc = fmt.Sprintf("ReadAt(%d bytes at %d)", n, off)
			got := make([]byte, n)
			k, err := f.ReadAt(got, off)
			want := []byte{}
			if off < int64(len(ref.data)) {
				want = ref.data[off:min(off+n, int64(len(ref.data)))]
			}
			if k != len(want) || !bytes.Equal(got[:k], want) {
				t.Fatalf("op %d %s = %d, %v: wrong data (want %d bytes)", op, desc, k, err, len(want))
			}
			if (k < int(n)) != errors.Is(err, io.EOF) || (err != nil && !errors.Is(err, io.EOF)) {
				t.Fatalf("op %d %s: error %v with n=%d", op, desc, err, k)
			}
		case 7:
			size := randOff()
			if r.IntN(5) == 0 {
				size = 0
			}
			size = max(size, 0)
			desc = fmt.Sprintf("Truncate(%d)", size)
			if err := f.Truncate(size); err != nil {
				t.Fatalf("op %d %s: %v", op, desc, err)
			}
			ref.truncate(size)
		case 8:
			desc = fmt.Sprintf("PunchHole(%d, %d)", off, n)
			if err := f.PunchHole(off, n); err != nil {
				t.Fatalf("op %d %s: %v", op, desc, err)
			}
			ref.punch(off, n)
		case 9:
			desc = "reopen"
			f.Close()
			f = openMem(t, e, m)
		}
		if size, _ := f.Size(); size != int64(len(ref.data)) {
			t.Fatalf("op %d %s: size %d, model %d", op, desc, size, len(ref.data))
		}
		if got := int64(len(m.Bytes())); got != e.Suite().CipherSize(int64(len(ref.data))) &&
			!(len(ref.data) == 0 && got == content.HeaderSize) {
			t.Fatalf("op %d %s: backing size %d for plaintext size %d", op, desc, got, len(ref.data))
		}
	}
	f.Close()
	f = openMem(t, e, m)
	got, err := readAll(f)
	if err != nil || !bytes.Equal(got, ref.data) {
		t.Fatalf("final read: %v (equal=%v)", err, bytes.Equal(got, ref.data))
	}
}

// TestHolesStaySparse checks that a write far past the end leaves the skipped
// chunks as all-zero stored chunks (holes) and sets SPARSE, that the old last
// chunk is re-sealed, and that punched chunks are zero on the backing.
func TestHolesStaySparse(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	e := NewEngine(suite, sequential(5))
	m := NewMemBacking()
	f := openMem(t, e, m)
	mustWrite(t, f, []byte("hello"), 0)
	mustWrite(t, f, []byte("world"), 5*cs+3)
	stored := m.Bytes()
	h, err := suite.ParseHeader(stored[:content.HeaderSize])
	if err != nil || h.Flags&content.FlagSparse == 0 {
		t.Fatalf("header %+v, %v: want SPARSE", h, err)
	}
	ccs := suite.CipherChunkSize()
	for i := 1; i < 5; i++ {
		c := stored[content.HeaderSize+i*ccs : content.HeaderSize+(i+1)*ccs]
		if !content.IsHole(c) {
			t.Fatalf("chunk %d is not a hole", i)
		}
	}
	if content.IsHole(stored[content.HeaderSize : content.HeaderSize+ccs]) {
		t.Fatal("chunk 0 (old last chunk, now full) was not re-sealed")
	}
	want := make([]byte, 5*cs+8)
	copy(want, "hello")
	copy(want[5*cs+3:], "world")
	got, err := readAll(f)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read: %v", err)
	}
	// Punch chunks 0..4 completely: chunk 0 becomes a hole too.
	if err := f.PunchHole(0, 5*cs); err != nil {
		t.Fatal(err)
	}
	stored = m.Bytes()
	if !content.IsHole(stored[content.HeaderSize : content.HeaderSize+ccs]) {
		t.Fatal("punched chunk 0 is not zero on the backing")
	}
	// A non-sparse file that is never grown with holes keeps flags 0.
	m2 := NewMemBacking()
	f2 := openMem(t, e, m2)
	mustWrite(t, f2, make([]byte, 3*cs), 0)
	if h, _ := suite.ParseHeader(m2.Bytes()[:content.HeaderSize]); h.Flags != 0 {
		t.Fatalf("dense file has flags %#x", h.Flags)
	}
}

// TestEnsureIDAndEmpty covers the header-only empty file.
func TestEnsureIDAndEmpty(t *testing.T) {
	suite := newTestSuite(t, content.AES256GCM, 4<<10)
	e := NewEngine(suite, sequential(6))
	m := NewMemBacking()
	f := openMem(t, e, m)
	if _, ok := f.ID(); ok {
		t.Fatal("0-byte file has an ID")
	}
	id, err := f.EnsureID()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(m.Bytes()); got != content.HeaderSize {
		t.Fatalf("backing is %d bytes after EnsureID", got)
	}
	mustWrite(t, f, []byte("data"), 0)
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f = openMem(t, e, m)
	if got, ok := f.ID(); !ok || got != id {
		t.Fatalf("ID after truncate(0) and reopen = %x, %v; want %x", got, ok, id)
	}
	if size, _ := f.Size(); size != 0 {
		t.Fatalf("header-only size %d", size)
	}
	if n, err := f.ReadAt(make([]byte, 1), 0); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt on empty = %d, %v", n, err)
	}
	f.Close()
	if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("ReadAt after Close: %v", err)
	}
}

// TestSmallWindows forces requests to span several backing I/O windows
// (normally 1 MiB) and reruns the model test and a round trip.
func TestSmallWindows(t *testing.T) {
	for _, win := range []int{1, 2, 3} {
		for _, par := range []bool{false, true} {
			t.Run(fmt.Sprintf("win%d/par%v", win, par), func(t *testing.T) {
				opts := sequential(20)
				if par {
					opts = parallel(20)
				}
				e := NewEngine(newTestSuite(t, content.AES256GCM, 4<<10), opts)
				e.windowChunks = win
				randomOps(t, e, 20, 150)
				roundTrip(t, e, 10*4096+3, 0)

				m := NewMemBacking()
				f := openMem(t, e, m)
				mustWrite(t, f, make([]byte, 10*4096), 0)
				_, w0 := m.Counts()
				mustWrite(t, f, make([]byte, 10*4096), 0)
				if _, w1 := m.Counts(); w1-w0 != (10+win-1)/win {
					t.Fatalf("10-chunk write with window %d made %d backing writes", win, w1-w0)
				}
				f.Close()
			})
		}
	}
}
