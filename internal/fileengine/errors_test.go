package fileengine

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// TestInvalidArguments: negative and overflowing offsets, and use after Close.
func TestInvalidArguments(t *testing.T) {
	e := NewEngine(newTestSuite(t, content.AES256GCM, 4<<10), DefaultOptions())
	f := openMem(t, e, NewMemBacking())
	cases := []struct {
		name string
		err  error
	}{
		{"ReadAt(-1)", func() error { _, err := f.ReadAt(make([]byte, 1), -1); return err }()},
		{"WriteAt(-1)", func() error { _, err := f.WriteAt([]byte{1}, -1); return err }()},
		{"WriteAt overflow", func() error { _, err := f.WriteAt([]byte{1, 2}, math.MaxInt64-1); return err }()},
		{"Truncate(-1)", f.Truncate(-1)},
		{"PunchHole(-1, 1)", f.PunchHole(-1, 1)},
		{"PunchHole(0, -1)", f.PunchHole(0, -1)},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, tc.err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"WriteAt":   func() error { _, err := f.WriteAt([]byte{1}, 0); return err }(),
		"Truncate":  f.Truncate(1),
		"PunchHole": f.PunchHole(0, 1),
		"Sync":      f.Sync(),
		"Close":     f.Close(),
		"Size":      func() error { _, err := f.Size(); return err }(),
		"EnsureID":  func() error { _, err := f.EnsureID(); return err }(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestWriteIntoCorruptChunk: a partial write into a chunk that fails
// authentication fails (no plaintext is invented for the rest of the chunk);
// a write covering the whole chunk replaces it.
func TestWriteIntoCorruptChunk(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	e := NewEngine(suite, sequential(15))
	plain := randomBytes(rand.New(rand.NewPCG(15, 15)), 3*cs)
	stored := writeFile(t, e, plain).Bytes()
	stored[content.HeaderSize+suite.CipherChunkSize()+40] ^= 1 // chunk 1
	m := NewMemBackingFrom(stored)
	f := openMem(t, e, m)
	var ce *ChunkError
	if _, err := f.WriteAt([]byte("x"), cs+5); !errors.Is(err, content.ErrCorruptChunk) || !errors.As(err, &ce) || ce.Index != 1 {
		t.Fatalf("partial write into corrupt chunk: %v", err)
	}
	if err := f.Truncate(cs + 10); !errors.Is(err, content.ErrCorruptChunk) {
		t.Fatalf("truncate into corrupt chunk: %v", err)
	}
	fresh := randomBytes(rand.New(rand.NewPCG(16, 16)), cs)
	mustWrite(t, f, fresh, cs)
	copy(plain[cs:], fresh)
	got, err := readAll(f)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("after repair: %v", err)
	}
}

// faultyBacking fails the n-th WriteAt (counting from 1).
type faultyBacking struct {
	*MemBacking
	failAt, calls int
}

var errInjected = errors.New("injected I/O error")

func (b *faultyBacking) WriteAt(p []byte, off int64) (int, error) {
	b.calls++
	if b.calls == b.failAt {
		// a torn write: half of it lands
		n, _ := b.MemBacking.WriteAt(p[:len(p)/2], off)
		return n, errInjected
	}
	return b.MemBacking.WriteAt(p, off)
}

// TestWriteErrors: a failing backing write is reported (wrapping the cause),
// and the File stays usable: its size is re-derived from the backing, reads
// either succeed or report the torn chunk.
func TestWriteErrors(t *testing.T) {
	const cs = 4 << 10
	suite := newTestSuite(t, content.AES256GCM, cs)
	e := NewEngine(suite, sequential(17))
	plain := randomBytes(rand.New(rand.NewPCG(17, 17)), 2*cs+9)
	for failAt := 1; failAt <= 3; failAt++ {
		fb := &faultyBacking{MemBacking: writeFile(t, e, plain), failAt: failAt}
		f, err := e.Open(fb)
		if err != nil {
			t.Fatal(err)
		}
		// needs: SPARSE header, old last chunk, new tail: three writes
		_, err = f.WriteAt([]byte("tail"), 9*cs)
		if !errors.Is(err, errInjected) {
			t.Fatalf("failAt %d: %v", failAt, err)
		}
		size, _ := f.Size()
		buf := make([]byte, size)
		if n, err := f.ReadAt(buf, 0); err != nil && !isAuthError(err) {
			t.Fatalf("failAt %d: read after failed write: %d, %v", failAt, n, err)
		}
		f.Close()
	}
}
