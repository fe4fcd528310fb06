package fileengine

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// recordingBacking snapshots the ciphertext after every mutating call, so a
// test can inspect each state a crash could leave behind (between calls;
// torn calls fail authentication of the torn chunk in any case).
type recordingBacking struct {
	*MemBacking
	snapshots [][]byte
}

func (r *recordingBacking) WriteAt(p []byte, off int64) (int, error) {
	n, err := r.MemBacking.WriteAt(p, off)
	r.snapshots = append(r.snapshots, r.Bytes())
	return n, err
}

func (r *recordingBacking) Truncate(size int64) error {
	err := r.MemBacking.Truncate(size)
	r.snapshots = append(r.snapshots, r.Bytes())
	return err
}

// TestCrashStates: every intermediate backing state of an operation reads
// back as the old content, the new content, or fails authentication; never
// as silently different data.
func TestCrashStates(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	e := NewEngine(suite, sequential(13))
	r := rand.New(rand.NewPCG(13, 13))
	initial := randomBytes(r, 2*cs+100)
	ops := []struct {
		name string
		do   func(f *File) error
		// mixOK: the operation is several independent chunk rewrites (like
		// a multi-block write on any file system), so a state where each
		// byte is old or new is fine too.
		mixOK bool
	}{
		{"append contiguous", func(f *File) error { _, err := f.WriteAt(randomBytes(r, 3*cs), 2*cs+100); return err }, false},
		{"append past holes", func(f *File) error { _, err := f.WriteAt(randomBytes(r, 100), 7*cs+5); return err }, false},
		{"overwrite middle", func(f *File) error { _, err := f.WriteAt(randomBytes(r, cs), 100); return err }, false},
		{"shrink to boundary", func(f *File) error { return f.Truncate(cs) }, false},
		{"shrink inside chunk", func(f *File) error { return f.Truncate(cs + 7) }, false},
		{"grow within chunk", func(f *File) error { return f.Truncate(2*cs + 200) }, false},
		{"grow with holes", func(f *File) error { return f.Truncate(9 * cs) }, false},
		{"punch", func(f *File) error { return f.PunchHole(10, 2*cs) }, true},
		{"truncate to 0", func(f *File) error { return f.Truncate(0) }, false},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			rec := &recordingBacking{MemBacking: NewMemBacking()}
			f := openMem(t, e, rec.MemBacking)
			mustWrite(t, f, initial, 0)
			f.Close()
			f, err := e.Open(rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := op.do(f); err != nil {
				t.Fatal(err)
			}
			after, err := readAll(f)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			for k, snap := range rec.snapshots {
				g, err := e.Open(NewMemBackingFrom(snap))
				if err != nil {
					if !isAuthError(err) {
						t.Fatalf("state %d: Open: %v", k, err)
					}
					continue
				}
				got, err := readAll(g)
				switch {
				case err != nil && isAuthError(err):
				case err != nil:
					t.Fatalf("state %d: %v", k, err)
				case bytes.Equal(got, initial), bytes.Equal(got, after):
				case op.mixOK && bytewiseMix(got, initial, after):
				default:
					t.Fatalf("state %d of %d reads as %d bytes that are neither the old nor the new content",
						k, len(rec.snapshots), len(got))
				}
			}
		})
	}
}

// TestPunchHoleOSFile punches whole chunks in a real file: the content reads
// as zeros and the stored chunks are zero (deallocated where supported).
func TestPunchHoleOSFile(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	e := NewEngine(suite, sequential(14))
	osf, err := os.OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer osf.Close()
	f, err := e.Open(osf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := randomBytes(rand.New(rand.NewPCG(14, 14)), 40*cs+3)
	mustWrite(t, f, want, 0)
	for _, span := range [][2]int64{{5, 20*cs + 9}, {39 * cs, cs + 3}} {
		if err := f.PunchHole(span[0], span[1]); err != nil {
			t.Fatal(err)
		}
		clear(want[span[0]:min(span[0]+span[1], int64(len(want)))])
	}
	got, err := readAll(f)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read after punch: %v (equal %v)", err, bytes.Equal(got, want))
	}
	stored := make([]byte, suite.CipherChunkSize())
	for i := 1; i < 20; i++ {
		if _, err := osf.ReadAt(stored, e.cipherOffset(uint64(i))); err != nil {
			t.Fatal(err)
		}
		if !content.IsHole(stored) {
			t.Fatalf("stored chunk %d is not zero after punch", i)
		}
	}
	if fi, err := osf.Stat(); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			t.Logf("backing file: %d bytes, %d bytes allocated", fi.Size(), st.Blocks*512)
		}
	}
}

// bytewiseMix reports whether got has the length of old and new and each
// byte equals the old or the new one.
func bytewiseMix(got, old, new []byte) bool {
	if len(got) != len(old) || len(got) != len(new) {
		return false
	}
	for i := range got {
		if got[i] != old[i] && got[i] != new[i] {
			return false
		}
	}
	return true
}
