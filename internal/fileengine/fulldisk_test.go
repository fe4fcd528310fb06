package fileengine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// fullBacking is a MemBacking on a disk that fills up: writes that would
// take the stored bytes beyond limit store what fits and fail with ENOSPC,
// as a short write(2) followed by a full disk does. It has no Fd, so the
// engine cannot reserve space first and must undo instead.
type fullBacking struct {
	*MemBacking
	limit int64
}

func (b *fullBacking) WriteAt(p []byte, off int64) (int, error) {
	if end := off + int64(len(p)); end > b.limit {
		n := max(0, b.limit-off)
		if n > 0 {
			b.MemBacking.WriteAt(p[:n], off)
		}
		return int(n), syscall.ENOSPC
	}
	return b.MemBacking.WriteAt(p, off)
}

// TestFullDiskUndo: a write that grows a file and fails part way on a full
// disk (at every byte where the disk can fill) leaves the file at its old
// size, reading as before except that bytes inside the failed request's
// range may already hold the new data (as after a failed multi-block
// write(2) on any file system), in the open File and after reopening the
// backing bytes; never an authentication error. The next write after space
// is freed works.
func TestFullDiskUndo(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	r := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		name      string
		oldSize   int
		off, size int // the failing write
	}{
		{"append within the last chunk", cs + 100, cs + 100, 500},
		{"append across chunks", 2*cs + 100, 2*cs + 100, 3 * cs},
		{"append at a boundary", 2 * cs, 2 * cs, cs + 10},
		{"overwrite the tail and grow", 2*cs + 100, cs + 50, 2 * cs},
		{"whole last chunk and grow", cs + 100, cs, 2 * cs},
		{"past holes", cs + 100, 5*cs + 7, 100},
		{"first write", 0, 0, 2*cs + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := randomBytes(r, tc.oldSize)
			base := NewMemBacking()
			e := NewEngine(suite, sequential(1))
			if len(old) > 0 {
				f := openMem(t, e, base)
				mustWrite(t, f, old, 0)
				f.Close()
			}
			stored := int64(len(base.Bytes()))
			grown := suite.CipherSize(int64(max(tc.oldSize, tc.off+tc.size)))
			p := randomBytes(r, tc.size)
			// What each old byte may read as after the failed write.
			newer := append([]byte(nil), old...)
			if tc.off < len(newer) {
				copy(newer[tc.off:], p)
			}
			for limit := stored; limit < grown; limit += max(1, (grown-stored)/97) {
				b := &fullBacking{MemBacking: NewMemBackingFrom(base.Bytes()), limit: limit}
				f, err := e.Open(b)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt(p, int64(tc.off)); !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("limit %d: WriteAt = %v, want ENOSPC", limit, err)
				}
				if got, err := readAll(f); err != nil || !bytewiseMix(got, old, newer) {
					t.Fatalf("limit %d: after the failed write: %d bytes (want %d), %v", limit, len(got), len(old), err)
				}
				// Space again: the write goes through.
				b.limit = 1 << 40
				mustWrite(t, f, p, int64(tc.off))
				f.Close()
				f2 := openMem(t, e, b.MemBacking)
				want := append([]byte(nil), old...)
				if end := tc.off + tc.size; end > len(want) {
					want = append(want, make([]byte, end-len(want))...)
				}
				copy(want[tc.off:], p)
				if got, err := readAll(f2); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("limit %d: reopened after the retried write: %v", limit, err)
				}
				f2.Close()

				// The failed state alone, reopened, reads as before too.
				b2 := &fullBacking{MemBacking: NewMemBackingFrom(base.Bytes()), limit: limit}
				f3, _ := e.Open(b2)
				f3.WriteAt(p, int64(tc.off))
				f3.Close()
				f4 := openMem(t, e, b2.MemBacking)
				if got, err := readAll(f4); err != nil || !bytewiseMix(got, old, newer) {
					t.Fatalf("limit %d: reopened after the failed write: %d bytes, %v", limit, len(got), err)
				}
				f4.Close()
			}
		})
	}
}

// headerTearBacking tears the next header write: it stores the first 10
// bytes and fails with EIO, once, as a short write followed by an error.
type headerTearBacking struct {
	*MemBacking
	armed bool
}

func (b *headerTearBacking) WriteAt(p []byte, off int64) (int, error) {
	if b.armed && off == 0 {
		b.armed = false
		b.MemBacking.WriteAt(p[:10], off)
		return 10, syscall.EIO
	}
	return b.MemBacking.WriteAt(p, off)
}

// TestTornHeaderWrite: a header write that fails part way never leaves a
// file that can no longer be opened behind a request that succeeded, nor
// turns an empty file into one that cannot be opened. Clearing SPARSE after
// the last hole is filled puts the old header back (the write succeeds,
// SPARSE stays set); the first header of an empty file is taken back.
func TestTornHeaderWrite(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	e := NewEngine(suite, sequential(21))
	r := rand.New(rand.NewPCG(21, 21))

	t.Run("clearing SPARSE", func(t *testing.T) {
		b := &headerTearBacking{MemBacking: NewMemBacking()}
		f, _ := e.Open(b)
		tail := randomBytes(r, 100)
		mustWrite(t, f, tail, 2*cs) // chunks 0 and 1 are holes: SPARSE
		head := randomBytes(r, 2*cs)
		b.armed = true
		n, err := f.WriteAt(head, 0) // fills the last hole: clears SPARSE
		f.Close()
		g, oerr := e.Open(NewMemBackingFrom(b.Bytes()))
		if oerr != nil {
			t.Fatalf("WriteAt = %d, %v; then the file does not open: %v", n, err, oerr)
		}
		got, rerr := readAll(g)
		if err == nil && (rerr != nil || !bytes.Equal(got, append(head, tail...))) {
			t.Fatalf("WriteAt succeeded, then reads %d bytes, %v", len(got), rerr)
		}
	})
	t.Run("first header", func(t *testing.T) {
		b := &headerTearBacking{MemBacking: NewMemBacking(), armed: true}
		f, _ := e.Open(b)
		if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EIO) {
			t.Fatalf("WriteAt = %v, want EIO", err)
		}
		f.Close()
		g, err := e.Open(NewMemBackingFrom(b.Bytes()))
		if err != nil {
			t.Fatalf("an empty file whose first write failed does not open: %v", err)
		}
		if size, _ := g.Size(); size != 0 {
			t.Fatalf("size %d, want 0", size)
		}
	})
}
