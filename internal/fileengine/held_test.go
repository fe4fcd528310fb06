package fileengine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// heldHeader parses the stored header of m (which must have one).
func heldHeader(t *testing.T, e *Engine, m *MemBacking) content.Header {
	t.Helper()
	b := m.Bytes()
	if int64(len(b)) < e.lay.header {
		t.Fatalf("backing of %d bytes: no header", len(b))
	}
	h, err := e.suite.ParseHeader(b[:e.lay.header])
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHeldFirstWrite: a new file that stays one chunk long writes nothing
// until it settles, then its clean header and chunk in one backing write
// (held.go): the writes of tar's small files. Freshness is told the clean
// header only. Fails if the first write is made (1 write before the
// close), if a second write in chunk 0 is made, or if the close takes two
// writes.
func TestHeldFirstWrite(t *testing.T) {
	const cs = 4 << 10
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			e := newCompactEngine(t, alg, sequential(40))
			r := rand.New(rand.NewPCG(40, 40))
			plain := randomBytes(r, 3000)
			m := NewMemBacking()
			f := openRoots(t, e, m)
			var told []uint64
			f.SetOnHeader(func(id []byte, gen uint64) { told = append(told, gen) })
			mustWrite(t, f, plain[:2000], 0)
			mustWrite(t, f, plain[2000:], 2000)
			if _, w := m.Counts(); w != 0 || len(m.Bytes()) != 0 {
				t.Fatalf("two writes in chunk 0 of a new file: %d backing writes, %d bytes stored, want none", w, len(m.Bytes()))
			}
			if n, err := f.Size(); err != nil || n != 3000 {
				t.Fatalf("size while held: %d, %v", n, err)
			}
			if err := f.Settle(); err != nil {
				t.Fatal(err)
			}
			if _, w := m.Counts(); w != 1 {
				t.Fatalf("settle: %d backing writes, want 1 (clean header and chunk)", w)
			}
			h := heldHeader(t, e, m)
			if h.Flags&content.FlagDirty != 0 || len(told) != 1 || told[0] != h.Gen {
				t.Fatalf("after the settle: header flags %#x gen %d, told %v: want clean, told once", h.Flags, h.Gen, told)
			}
			if got := int64(len(m.Bytes())); got != e.lay.cipherSize(3000) {
				t.Fatalf("backing of %d bytes, want %d", got, e.lay.cipherSize(3000))
			}
			mustClose(t, f)
			if _, w := m.Counts(); w != 1 {
				t.Fatalf("close after the settle: %d backing writes in all, want 1", w)
			}
			readBack(t, e, m, plain)

			// A write that takes the file past chunk 0 writes the held
			// bytes first, then goes on as any write.
			m = NewMemBacking()
			f = openRoots(t, e, m)
			mustWrite(t, f, plain, 0)
			more := randomBytes(r, cs)
			mustWrite(t, f, more, 3000)
			mustClose(t, f)
			readBack(t, e, m, append(bytes.Clone(plain), more...))
		})
	}
}

// TestHeldWrittenBeforeOtherUses: whatever else touches the backing file
// of a held file finds the held write there first: it is written as it
// would have been (DIRTY header and chunk 0), and the file then reads back
// whole once closed. Fails if any of these reads or changes the backing
// file with the write still held (a read of an empty backing, a header
// written over nothing).
func TestHeldWrittenBeforeOtherUses(t *testing.T) {
	e := newCompactEngine(t, content.AES256GCM, sequential(41))
	r := rand.New(rand.NewPCG(41, 41))
	plain := randomBytes(r, 1000)
	uses := []struct {
		name string
		do   func(f *File) error
		want []byte
	}{
		{"read", func(f *File) error {
			got := make([]byte, 1000)
			n, err := f.ReadAt(got, 0)
			if n != 1000 || !bytes.Equal(got, plain) {
				return errors.New("read gave other bytes")
			}
			return err
		}, plain},
		{"truncate", func(f *File) error { return f.Truncate(500) }, plain[:500]},
		{"grow", func(f *File) error { return f.Truncate(3 << 10) }, append(bytes.Clone(plain), make([]byte, 3<<10-1000)...)},
		{"punch", func(f *File) error { return f.PunchHole(10, 10) }, append(append(bytes.Clone(plain[:10]), make([]byte, 10)...), plain[20:]...)},
		{"fsync", func(f *File) error { return f.Sync() }, plain},
		{"ensure ID", func(f *File) error { _, err := f.EnsureID(); return err }, plain},
		{"add binding", func(f *File) error {
			return f.AddBinding(Place{ParentID: bytes.Repeat([]byte{0x55}, 16), EncName: "other"}, 0)
		}, plain},
		{"reload", func(f *File) error { return f.Reload() }, plain},
	}
	for _, u := range uses {
		t.Run(u.name, func(t *testing.T) {
			m := NewMemBacking()
			f := openRoots(t, e, m)
			mustWrite(t, f, plain, 0)
			if len(m.Bytes()) != 0 {
				t.Fatal("first write not held")
			}
			if err := u.do(f); err != nil {
				t.Fatal(err)
			}
			if len(m.Bytes()) == 0 {
				t.Fatal("nothing written")
			}
			mustClose(t, f)
			readBack(t, e, m, u.want)
		})
	}
}

// TestHeldBounded: an engine holds at most maxHeldBytes of first writes;
// the files past it are written through, and every file reads back.
func TestHeldBounded(t *testing.T) {
	e := newCompactEngine(t, content.AES256GCM, sequential(42))
	per := int(e.lay.header) + e.cipherChunk
	n := maxHeldBytes/per + 5
	ms := make([]*MemBacking, n)
	fs := make([]*File, n)
	plain := []byte("a small file")
	written := 0
	for i := range n {
		ms[i] = NewMemBacking()
		fs[i] = openRoots(t, e, ms[i])
		mustWrite(t, fs[i], plain, 0)
		if len(ms[i].Bytes()) > 0 {
			written++
		}
	}
	if written != n-maxHeldBytes/per {
		t.Fatalf("%d of %d new files written at once, want %d", written, n, n-maxHeldBytes/per)
	}
	if got := e.held.Load(); got != int64(maxHeldBytes/per*per) {
		t.Fatalf("engine holds %d bytes, want %d", got, maxHeldBytes/per*per)
	}
	for i := range n {
		mustClose(t, fs[i])
		readBack(t, e, ms[i], plain)
	}
	if got := e.held.Load(); got != 0 {
		t.Fatalf("engine holds %d bytes after every close", got)
	}
}

// TestHeldWriteFails: the settle's write fails (EIO, ENOSPC): the error is
// returned, nothing stays held, and the file is empty, never a header
// without its chunk.
func TestHeldWriteFails(t *testing.T) {
	e := newCompactEngine(t, content.AES256GCM, sequential(43))
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
		t.Run(errno.Error(), func(t *testing.T) {
			fb := &failingWrites{MemBacking: NewMemBacking(), err: errno}
			f, err := e.OpenAt(fb, testPlace)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, f, []byte("held bytes"), 0)
			fb.fail = true
			if err := f.Close(); !errors.Is(err, errno) {
				t.Fatalf("close: %v, want %v", err, errno)
			}
			if got := len(fb.Bytes()); got != 0 {
				t.Fatalf("backing of %d bytes after a failed first write, want empty", got)
			}
			if got := e.held.Load(); got != 0 {
				t.Fatalf("engine holds %d bytes after the close", got)
			}
		})
	}
}

// failingWrites is a MemBacking whose writes fail with err once fail is set.
type failingWrites struct {
	*MemBacking
	err  error
	fail bool
}

func (b *failingWrites) WriteAt(p []byte, off int64) (int, error) {
	if b.fail {
		return 0, b.err
	}
	return b.MemBacking.WriteAt(p, off)
}
