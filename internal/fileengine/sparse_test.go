package fileengine

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// storedFlags returns the header flags of stored backing bytes.
func storedFlags(tb testing.TB, s *content.Suite, stored []byte) uint16 {
	tb.Helper()
	h, err := s.ParseHeader(stored[:content.HeaderSize])
	if err != nil {
		tb.Fatalf("header: %v", err)
	}
	return h.Flags
}

// rawBacking is what a test needs of a backing to tamper with it.
type rawBacking interface {
	Backing
	bytes(tb testing.TB) []byte
	zero(tb testing.TB, off, n int64)
}

type memRaw struct{ *MemBacking }

func (m memRaw) bytes(testing.TB) []byte { return m.Bytes() }
func (m memRaw) zero(_ testing.TB, off, n int64) {
	b := m.Bytes()
	clear(b[off : off+n])
	m.SetBytes(b)
}

// fileRaw is a real backing file (backing.File: reserve, punch, SEEK_HOLE).
type fileRaw struct {
	*backing.File
	path string
}

func (r fileRaw) bytes(tb testing.TB) []byte {
	b, err := os.ReadFile(r.path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
func (r fileRaw) zero(tb testing.TB, off, n int64) {
	if _, err := r.WriteAt(make([]byte, n), off); err != nil {
		tb.Fatal(err)
	}
}

// backings returns fresh backings of every kind the hole rule must be right
// on: in memory (no hole detection), a file in the test's temp dir (ext4
// here) and one in /dev/shm (tmpfs) when it exists.
func backings(t *testing.T) map[string]func() rawBacking {
	newFile := func(dir string) func() rawBacking {
		return func() rawBacking {
			d, err := os.MkdirTemp(dir, "sparse")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(d) })
			p := filepath.Join(d, "f")
			fd, err := syscall.Open(p, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			f := backing.NewFile(fd, nil)
			t.Cleanup(func() { f.Close() })
			return fileRaw{f, p}
		}
	}
	m := map[string]func() rawBacking{
		"mem":     func() rawBacking { return memRaw{NewMemBacking()} },
		"tempdir": newFile(t.TempDir()),
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		m["tmpfs"] = newFile("/dev/shm")
	}
	return m
}

// TestSparseClearedOnceFilled: a file grown by truncate (what fallocate
// mode 0 does through the mount) and then written in full has no hole
// left, so SPARSE is cleared and zeros swapped into any non-final chunk
// fail authentication. Likewise after a write past the end and after a
// punched hole, once refilled.
func TestSparseClearedOnceFilled(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	r := rand.New(rand.NewPCG(3, 3))
	ccs := int64(suite.CipherChunkSize())
	for name, newB := range backings(t) {
		for _, tc := range []struct {
			name string
			make func(t *testing.T, f *File, data []byte)
		}{
			{"truncate then write in order", func(t *testing.T, f *File, data []byte) {
				if err := f.Truncate(int64(len(data))); err != nil {
					t.Fatal(err)
				}
				for off := 0; off < len(data); off += 3000 {
					mustWrite(t, f, data[off:min(off+3000, len(data))], int64(off))
				}
			}},
			{"truncate then write backwards", func(t *testing.T, f *File, data []byte) {
				if err := f.Truncate(int64(len(data))); err != nil {
					t.Fatal(err)
				}
				for end := len(data); end > 0; end -= cs {
					mustWrite(t, f, data[max(0, end-cs):end], int64(max(0, end-cs)))
				}
			}},
			{"write past the end then fill", func(t *testing.T, f *File, data []byte) {
				mustWrite(t, f, data[6*cs:], 6*cs)
				mustWrite(t, f, data[:6*cs], 0)
			}},
			{"punch then refill", func(t *testing.T, f *File, data []byte) {
				mustWrite(t, f, data, 0)
				if err := f.PunchHole(cs, 3*cs); err != nil {
					t.Fatal(err)
				}
				mustWrite(t, f, data[cs:4*cs], cs)
			}},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				b := newB()
				e := NewEngine(suite, sequential(4))
				f, err := e.Open(b)
				if err != nil {
					t.Fatal(err)
				}
				data := randomBytes(r, 8*cs+100)
				tc.make(t, f, data)
				if got, err := readAll(f); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("read back: %v", err)
				}
				if fl := storedFlags(t, suite, b.bytes(t)); fl&content.FlagSparse != 0 {
					t.Fatalf("SPARSE still set on a file without holes")
				}
				f.Close()
				b.zero(t, content.HeaderSize+2*ccs, ccs) // swap zeros into chunk 2
				f2, err := e.Open(b)
				if err != nil {
					t.Fatal(err)
				}
				defer f2.Close()
				if _, err := readAll(f2); !errors.Is(err, content.ErrCorruptChunk) {
					t.Fatalf("zeroed chunk 2 read: %v, want ErrCorruptChunk", err)
				}
			})
		}
	}
}

// TestSparseKeptWhileHolesLeft: SPARSE stays as long as any hole does,
// also when the file system does not see the hole (zeros written in its
// place: MemBacking, or a backing copied without holes), so holes always
// read back as zeros.
func TestSparseKeptWhileHolesLeft(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	r := rand.New(rand.NewPCG(5, 5))
	for name, newB := range backings(t) {
		t.Run(name, func(t *testing.T) {
			b := newB()
			e := NewEngine(suite, sequential(6))
			f, err := e.Open(b)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]byte, 10*cs)
			put := func(off int64, n int) {
				p := randomBytes(r, n)
				mustWrite(t, f, p, off)
				copy(want[off:], p)
			}
			put(9*cs, cs) // holes 0..8
			put(0, cs)    // fills hole 0
			put(8*cs, cs) // fills hole 8
			for i := 2; i < 8; i++ {
				put(int64(i)*cs, cs)
			}
			// Only chunk 1 is a hole now.
			if fl := storedFlags(t, suite, b.bytes(t)); fl&content.FlagSparse == 0 {
				t.Fatal("SPARSE cleared while chunk 1 is a hole")
			}
			f.Close()

			// The same bytes with the hole written out as zeros: a file
			// system cannot tell, the engine must still keep SPARSE.
			copyB := memRaw{NewMemBackingFrom(b.bytes(t))}
			for _, bb := range []Backing{b, copyB} {
				f, err := e.Open(bb)
				if err != nil {
					t.Fatal(err)
				}
				p := randomBytes(r, 100)
				mustWrite(t, f, p, 5*cs+7)
				w := append([]byte(nil), want...)
				copy(w[5*cs+7:], p)
				if got, err := readAll(f); err != nil || !bytes.Equal(got, w) {
					t.Fatalf("after a write elsewhere: %v", err)
				}
				f.Close()
			}
			if fl := storedFlags(t, suite, copyB.Bytes()); fl&content.FlagSparse == 0 {
				t.Fatal("SPARSE cleared on a copy whose hole is stored as zeros")
			}
		})
	}
}

// failAfter is a MemBacking whose chunk writes fail with err at or past
// backing offset from (header writes at 0 go through), as a file system
// refusing to grow a file does (EFBIG past its maximum size).
type failAfter struct {
	*MemBacking
	from int64
	err  error
}

func (b *failAfter) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > b.from && off > 0 {
		return 0, b.err
	}
	return b.MemBacking.WriteAt(p, off)
}

// TestFailedGrowingWriteKeepsSparseClear: a write that would leave holes
// but fails (the backing refuses it, or it is beyond the maximum size)
// leaves the file, SPARSE flag included, as it was.
func TestFailedGrowingWriteKeepsSparseClear(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	r := rand.New(rand.NewPCG(9, 9))
	for _, tc := range []struct {
		name    string
		oldSize int
		write   func(f *File) error
		wantErr error
	}{
		{"EFBIG past holes", cs + 10, func(f *File) error { _, err := f.WriteAt([]byte{1}, 5*cs); return err }, syscall.EFBIG},
		{"EFBIG past holes, empty file", 0, func(f *File) error { _, err := f.WriteAt([]byte{1}, 5*cs); return err }, syscall.EFBIG},
		{"EFBIG truncate", cs + 10, func(f *File) error { return f.Truncate(7 * cs) }, syscall.EFBIG},
		{"beyond the maximum size", cs + 10, func(f *File) error { _, err := f.WriteAt([]byte{1}, math.MaxInt64-1); return err }, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(suite, sequential(10))
			m := NewMemBacking()
			old := randomBytes(r, tc.oldSize)
			f := openMem(t, e, m)
			mustWrite(t, f, old, 0)
			if _, err := f.EnsureID(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			before := m.Bytes()
			b := &failAfter{MemBacking: m, from: int64(len(before)), err: syscall.EFBIG}
			f, err := e.Open(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.write(f); !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got, err := readAll(f); err != nil || !bytes.Equal(got, old) {
				t.Fatalf("after the failed write: %v", err)
			}
			f.Close()
			after := m.Bytes()
			if fl := storedFlags(t, suite, after); fl&content.FlagSparse != 0 {
				t.Fatal("a failed write left SPARSE set")
			}
			if len(after) != len(before) {
				t.Fatalf("a failed write left %d stored bytes, want %d", len(after), len(before))
			}
		})
	}
}

// TestOffsetsNear2p63: writes and truncates whose end lies beyond the
// largest size a backing offset can express fail with ErrTooLarge and
// change nothing; reads there are at EOF. Backing offsets never overflow.
func TestOffsetsNear2p63(t *testing.T) {
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			suite := newTestSuite(t, alg, 4<<10)
			e := NewEngine(suite, sequential(11))
			m := NewMemBacking()
			f := openMem(t, e, m)
			defer f.Close()
			mustWrite(t, f, []byte("hello"), 0)
			before := m.Bytes()
			maxSize := suite.MaxPlainSize()
			if cs := suite.CipherSize(maxSize); cs <= 0 || suite.CipherSize(maxSize+int64(suite.ChunkSize())) > 0 {
				t.Fatalf("MaxPlainSize %d is not the largest whole-chunk size that fits: CipherSize %d", maxSize, cs)
			}
			for _, off := range []int64{math.MaxInt64 - 1<<10, math.MaxInt64 - 1<<20, maxSize, maxSize - 1<<10 + 1} {
				if _, err := f.WriteAt(make([]byte, 1<<10), off); !errors.Is(err, ErrTooLarge) {
					t.Errorf("WriteAt(1 KiB at %d) = %v, want ErrTooLarge", off, err)
				}
				if err := f.Truncate(off + 1<<10); !errors.Is(err, ErrTooLarge) {
					t.Errorf("Truncate(%d) = %v, want ErrTooLarge", off+1<<10, err)
				}
				if n, err := f.ReadAt(make([]byte, 10), off); n != 0 || err == nil {
					t.Errorf("ReadAt at %d = %d, %v, want EOF", off, n, err)
				}
			}
			if err := f.Truncate(math.MaxInt64); !errors.Is(err, ErrTooLarge) {
				t.Errorf("Truncate(MaxInt64) = %v", err)
			}
			if !bytes.Equal(m.Bytes(), before) {
				t.Fatal("a refused write changed the backing file")
			}
			if got, err := readAll(f); err != nil || string(got) != "hello" {
				t.Fatalf("%q, %v", got, err)
			}
		})
	}
}
