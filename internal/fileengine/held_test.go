package fileengine

import (
	"bytes"
	"errors"
	"io"
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

// TestHeldFirstWrite: a new file whose first write leaves it one chunk
// long is written once, clean (held.go): its clean header and chunk in one
// backing write, made before the write returns, and nothing more at the
// close. Freshness is told the clean header only. A second write in chunk
// 0 then goes the usual way (the DIRTY header with the chunk, the clean
// header at the close). Fails if the write leaves the backing file empty
// (held past the call: a reader of CIPHERDIR after close(2) would find
// nothing, as CI once did through the mount), DIRTY, or written twice.
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
			if _, w := m.Counts(); w != 1 {
				t.Fatalf("first write of a new small file: %d backing writes, want 1", w)
			}
			h := heldHeader(t, e, m)
			if h.Flags&content.FlagDirty != 0 || len(told) != 1 || told[0] != h.Gen {
				t.Fatalf("after the first write: header flags %#x gen %d, told %v: want clean, told once", h.Flags, h.Gen, told)
			}
			if got := int64(len(m.Bytes())); got != e.lay.cipherSize(2000) {
				t.Fatalf("backing of %d bytes, want %d", got, e.lay.cipherSize(2000))
			}
			if err := f.Settle(); err != nil {
				t.Fatal(err)
			}
			if _, w := m.Counts(); w != 1 {
				t.Fatalf("settle after a clean first write: %d backing writes in all, want 1", w)
			}
			readBack(t, e, m, plain[:2000])

			mustWrite(t, f, plain[2000:], 2000)
			if _, w := m.Counts(); w != 2 {
				t.Fatalf("second write in chunk 0: %d backing writes in all, want 2 (DIRTY header with the chunk)", w)
			}
			if h := heldHeader(t, e, m); h.Flags&content.FlagDirty == 0 {
				t.Fatal("second write: header not DIRTY")
			}
			mustClose(t, f)
			if _, w := m.Counts(); w != 3 {
				t.Fatalf("close: %d backing writes in all, want 3", w)
			}
			readBack(t, e, m, plain)

			// A first write past chunk 0 is not held: it is made as it
			// comes, DIRTY, and settled at the close.
			m = NewMemBacking()
			f = openRoots(t, e, m)
			more := randomBytes(r, cs+100)
			mustWrite(t, f, more, 0)
			if h := heldHeader(t, e, m); h.Flags&content.FlagDirty == 0 {
				t.Fatal("a first write of two chunks: header not DIRTY")
			}
			mustClose(t, f)
			readBack(t, e, m, more)
		})
	}
}

// TestHeldThenOtherUses: a file made clean by its first write takes every
// other change as any clean file does, and reads back whole once closed.
// Fails if the clean first write left the File's state (size, header, tag
// entries, the cached last chunk) out of step with its backing file.
func TestHeldThenOtherUses(t *testing.T) {
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
		{"grow past chunk 0", func(f *File) error { return f.Truncate(9 << 10) }, append(bytes.Clone(plain), make([]byte, 9<<10-1000)...)},
		{"append past chunk 0", func(f *File) error {
			_, err := f.WriteAt(plain, 5<<10)
			return err
		}, append(append(bytes.Clone(plain), make([]byte, 5<<10-1000)...), plain...)},
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
			if h := heldHeader(t, e, m); h.Flags&content.FlagDirty != 0 {
				t.Fatal("first write not clean")
			}
			if err := u.do(f); err != nil {
				t.Fatal(err)
			}
			mustClose(t, f)
			readBack(t, e, m, u.want)
		})
	}
}

// TestHeldWriteFails: the first write's backing write fails (EIO,
// ENOSPC): the write returns the error, the file is empty, never a
// header without its chunk, and a later write and close store it.
func TestHeldWriteFails(t *testing.T) {
	e := newCompactEngine(t, content.AES256GCM, sequential(43))
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
		t.Run(errno.Error(), func(t *testing.T) {
			fb := &failingWrites{MemBacking: NewMemBacking(), err: errno, fail: true}
			f, err := e.OpenAt(fb, testPlace)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("first bytes"), 0); !errors.Is(err, errno) {
				t.Fatalf("write: %v, want %v", err, errno)
			}
			if got := len(fb.Bytes()); got != 0 {
				t.Fatalf("backing of %d bytes after a failed first write, want empty", got)
			}
			if n, err := f.Size(); err != nil || n != 0 {
				t.Fatalf("size after a failed first write: %d, %v", n, err)
			}
			fb.fail = false
			mustWrite(t, f, []byte("second try"), 0)
			mustClose(t, f)
			readBack(t, e, fb.MemBacking, []byte("second try"))
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

// TestHeldWriteRacingWipe: the keys are wiped (a lock) after a first
// write is held but before it is made. The header is put in the held
// buffer only when the write is made (writeHeld), and now cannot be: the
// write fails with ErrWiped and the file is empty, never a header without
// its MAC, and the daemon does not panic.
func TestHeldWriteRacingWipe(t *testing.T) {
	opts := sequential(44)
	var e *Engine
	opts.Rand = &wipeOnRead{r: opts.Rand, at: 2, wipe: func() { e.suite.Wipe() }} // 1: the file ID; 2: chunk 0's nonce
	e = newCompactEngine(t, content.AES256GCM, opts)
	m := NewMemBacking()
	f, err := e.OpenAt(m, testPlace)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("first bytes"), 0); !errors.Is(err, content.ErrWiped) {
		t.Fatalf("write: %v, want ErrWiped", err)
	}
	if got := len(m.Bytes()); got != 0 {
		t.Fatalf("backing of %d bytes after the failed write, want empty", got)
	}
	f.Close()
}

// wipeOnRead is a random source that calls wipe before its at-th read.
type wipeOnRead struct {
	r    io.Reader
	n    int
	at   int
	wipe func()
}

func (w *wipeOnRead) Read(p []byte) (int, error) {
	if w.n++; w.n == w.at {
		w.wipe()
	}
	return w.r.Read(p)
}
