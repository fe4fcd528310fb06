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

// TestFaultInjection runs seeded random writes, reads, truncates, hole
// punches, syncs and reopens against a backing that fails on purpose (EIO,
// ENOSPC, EDQUOT, EINTR, short writes with and without an error) at random
// calls, including the calls that undo a failed write, and checks the model
// after every operation that met a fault:
//   - a failed operation returns an error that is one of the injected ones
//     (the caller gets the errno), never an authentication error or garbage;
//   - the open File and the backing bytes reopened read every chunk the
//     failed operation did not try to change exactly as acknowledged
//     (nothing acknowledged is lost);
//   - a chunk it did try to change reads as the old data, the new data
//     inside the request's range, or fails authentication: a half-written
//     chunk is detected, never returned as garbage;
//   - an operation that met a fault and still succeeded left exactly the
//     model.
//
// After a failure the test salvages what reads (as a user would after the
// EIO) and goes on from there, so one run meets many faults.
func TestFaultInjection(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if testing.Short() || raceEnabled {
		// Two seeds keep -race fast; these two met a torn header write
		// that the engine once reported as a success.
		seeds = []uint64{4, 5}
	}
	for _, cfg := range []struct {
		name          string
		par, reserve  bool
		chunk, chunks int
	}{
		{"sequential", false, false, 4 << 10, 10},
		{"sequential/reserve", false, true, 4 << 10, 10},
		{"parallel/reserve", true, true, 4 << 10, 10},
	} {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed%d", cfg.name, seed), func(t *testing.T) {
				opts := sequential(seed)
				if cfg.par {
					opts = parallel(seed)
				}
				e := NewEngine(newTestSuite(t, content.AES256GCM, cfg.chunk), opts)
				h := &faultRun{t: t, e: e, b: newFaultBacking(seed, 0.04, cfg.reserve), maxSize: int64(cfg.chunks * cfg.chunk), bigWrites: true}
				h.run(seed, 400)
				t.Logf("%d operations failed on purpose, %d succeeded despite a fault", h.failed, h.survived)
			})
		}
	}
}

// faultRun is one seeded run of TestFaultInjection.
type faultRun struct {
	t       *testing.T
	e       *Engine
	b       *faultBacking
	f       *File
	ref     []byte // the acknowledged content
	maxSize int64
	// bigWrites: now and then a write larger than the engine's window
	// (1 MiB, 4 MiB on the parallel path, where they are pipelined).
	bigWrites bool

	failed, survived int
}

// failedOp is what a failed operation may have done: bytes in [lo, hi)
// may read as newByte(i) instead of their old value (beyond the old size
// the old value is zero).
type failedOp struct {
	lo, hi  int64
	newByte func(i int64) byte
}

func (h *faultRun) run(seed uint64, ops int) {
	t := h.t
	r := rand.New(rand.NewPCG(seed, 0x0ff))
	cs := int64(h.e.Suite().ChunkSize())
	randOff := func() int64 {
		if r.IntN(3) == 0 {
			return r.Int64N(h.maxSize)
		}
		return max(r.Int64N(h.maxSize/cs)*cs+r.Int64N(5)-2, 0)
	}
	randLen := func() int64 {
		if r.IntN(2) == 0 {
			return r.Int64N(16) + 1
		}
		return r.Int64N(3*cs) + 1
	}
	var err error
	if h.f, err = h.e.Open(h.b.asBacking()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if h.f != nil {
			h.f.Close()
		}
	}()
	for op := range ops {
		old := h.ref
		off, n := randOff(), randLen()
		var desc string
		var fo failedOp
		var apply func()
		h.b.reset(true)
		switch r.IntN(12) {
		case 0, 1, 2, 3:
			p := randomBytes(r, int(n))
			desc = fmt.Sprintf("WriteAt(%d bytes at %d)", n, off)
			_, err = h.f.WriteAt(p, off)
			fo = failedOp{off, off + n, func(i int64) byte { return p[i-off] }}
			apply = func() { h.ref = modelWrite(h.ref, p, off) }
		case 4, 5, 6:
			desc = fmt.Sprintf("ReadAt(%d bytes at %d)", n, off)
			h.read(op, desc, off, n)
			h.b.reset(false)
			continue
		case 7:
			size := randOff()
			if r.IntN(5) == 0 {
				size = 0
			}
			desc = fmt.Sprintf("Truncate(%d)", size)
			err = h.f.Truncate(size)
			oldLen := int64(len(old))
			fo = failedOp{min(size, oldLen), max(size, oldLen), func(i int64) byte { return oldAt(old, i) }}
			apply = func() { h.ref = modelTruncate(h.ref, size) }
		case 8:
			desc = fmt.Sprintf("PunchHole(%d, %d)", off, n)
			err = h.f.PunchHole(off, n)
			fo = failedOp{off, off + n, func(int64) byte { return 0 }}
			apply = func() {
				h.ref = append([]byte(nil), h.ref...)
				if end := min(off+n, int64(len(h.ref))); off < end {
					clear(h.ref[off:end])
				}
			}
		case 9:
			desc = "Sync"
			err = h.f.Sync()
			fo = failedOp{}
			apply = func() {}
		case 10:
			desc = "reopen"
			h.f.Close()
			h.f, err = h.e.Open(h.b.asBacking())
			if err != nil {
				h.b.reset(false)
				if !h.b.explains(err) && !faultless(h.b) {
					t.Fatalf("op %d %s: %v is not an injected error", op, desc, err)
				}
				if h.f, err = h.e.Open(h.b.asBacking()); err != nil {
					t.Fatalf("op %d %s without faults: %v", op, desc, err)
				}
			}
			err = nil
			fo = failedOp{}
			apply = func() {}
		case 11:
			// Rarely, a write larger than a parallel engine's 4 MiB window,
			// so that its pipelined backing writes fail too.
			if !h.bigWrites || r.IntN(8) != 0 {
				h.b.reset(false)
				continue
			}
			big := int64(5<<20) + r.Int64N(cs)
			p := make([]byte, big)
			rand.NewChaCha8([32]byte{byte(op), byte(seed)}).Read(p)
			desc = fmt.Sprintf("WriteAt(%d bytes at 0)", big)
			_, err = h.f.WriteAt(p, 0)
			fo = failedOp{0, big, func(i int64) byte { return p[i] }}
			apply = func() { h.ref = modelWrite(h.ref, p, 0) }
		}
		faulted := !faultless(h.b)
		h.b.disarm()
		if err == nil {
			apply()
			if faulted {
				h.survived++
				where := fmt.Sprintf("op %d %s succeeded despite %s", op, desc, h.b)
				h.check(h.f, nil, where)
				h.checkReopened(where)
			}
			continue
		}
		h.failed++
		if !h.b.explains(err) {
			t.Fatalf("op %d %s: %v is not an injected error (%s)", op, desc, err, h.b)
		}
		where := fmt.Sprintf("op %d %s failed with %v (%s)", op, desc, err, h.b)
		h.check(h.f, &fo, where+": the open file")
		h.salvage(&fo, where)
	}
	h.b.reset(false)
	h.check(h.f, nil, "the end")
}

// faultless reports whether no fault was handed out since the last reset.
func faultless(b *faultBacking) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.injected) == 0 && !b.shortNil
}

// read reads through the faulty backing: the delivered bytes are the
// acknowledged ones, and an error is an injected one.
func (h *faultRun) read(op int, desc string, off, n int64) {
	got := make([]byte, n)
	k, err := h.f.ReadAt(got, off)
	want := h.ref[min(off, int64(len(h.ref))):min(off+n, int64(len(h.ref)))]
	if err != nil && !errors.Is(err, io.EOF) {
		if !h.b.explains(err) {
			h.t.Fatalf("op %d %s: %v is not an injected error (%s)", op, desc, err, h.b)
		}
		if k > len(want) || !bytes.Equal(got[:k], want[:k]) {
			h.t.Fatalf("op %d %s failed with %v after delivering %d wrong bytes", op, desc, err, k)
		}
		for _, c := range got[k:] {
			if c != 0 {
				h.t.Fatalf("op %d %s failed with %v and left unauthenticated bytes past n=%d", op, desc, err, k)
			}
		}
		return
	}
	if k != len(want) || !bytes.Equal(got[:k], want) {
		h.t.Fatalf("op %d %s = %d, %v: wrong data (want %d bytes)", op, desc, k, err, len(want))
	}
}

// check reads f chunk by chunk with the faults off. With fo nil every byte
// must be the model's. Otherwise chunks the failed operation did not touch
// must read exactly, and touched ones may instead fail authentication or
// hold the operation's new bytes within its range. It returns what reads,
// with unreadable chunks as zeros (the salvage).
func (h *faultRun) check(f *File, fo *failedOp, where string) []byte {
	t := h.t
	t.Helper()
	e := h.e
	cs := int64(e.Suite().ChunkSize())
	size, err := f.Size()
	if err != nil {
		t.Fatalf("%s: Size: %v", where, err)
	}
	if fo == nil && size != int64(len(h.ref)) {
		t.Fatalf("%s: size %d, model %d", where, size, len(h.ref))
	}
	headerTouched := fo != nil && h.b.touchedRange(0, content.HeaderSize)
	salvage := make([]byte, size)
	for start := int64(0); start < max(size, int64(len(h.ref))); start += cs {
		i := uint64(start / cs)
		touched := fo != nil && (headerTouched || h.b.touchedRange(e.cipherOffset(i), e.cipherOffset(i+1)))
		ackEnd := min(start+cs, int64(len(h.ref))) // acknowledged bytes of this chunk end here
		end := min(start+cs, size)
		if !touched && end < ackEnd {
			t.Fatalf("%s: chunk %d lost acknowledged bytes: file size %d, model %d", where, i, size, len(h.ref))
		}
		if start >= size {
			continue
		}
		buf := make([]byte, end-start)
		k, err := f.ReadAt(buf, start)
		if err != nil && !(errors.Is(err, io.EOF) && k == len(buf)) {
			if !isAuthError(err) {
				t.Fatalf("%s: chunk %d: %v, want an authentication error", where, i, err)
			}
			if !touched {
				t.Fatalf("%s: chunk %d, untouched by the failed operation, fails: %v", where, i, err)
			}
			continue
		}
		if start+int64(len(buf)) <= int64(len(h.ref)) && bytes.Equal(buf, h.ref[start:start+int64(len(buf))]) {
			copy(salvage[start:], buf)
			continue
		}
		for j, c := range buf {
			pos := start + int64(j)
			old := oldAt(h.ref, pos)
			switch {
			case c == old:
			case touched && fo.lo <= pos && pos < fo.hi && c == fo.newByte(pos):
			default:
				t.Fatalf("%s: chunk %d (touched %v) byte %d reads %#x: neither acknowledged (%#x) nor new", where, i, touched, pos, c, old)
			}
		}
		copy(salvage[start:], buf)
	}
	return salvage
}

// checkReopened checks that the backing bytes, opened anew, read exactly
// as the model.
func (h *faultRun) checkReopened(where string) {
	g, err := h.e.Open(NewMemBackingFrom(h.b.Bytes()))
	if err != nil {
		h.t.Fatalf("%s: reopening: %v", where, err)
	}
	defer g.Close()
	h.check(g, nil, where+": reopened")
}

// salvage does what a user does after an EIO: reopens the file, checks it
// like the open one, and keeps what reads (unreadable chunks become
// zeros), so that the run goes on from a known state.
func (h *faultRun) salvage(fo *failedOp, where string) {
	t := h.t
	copyB := NewMemBackingFrom(h.b.Bytes())
	var saved []byte
	g, err := h.e.Open(copyB)
	switch {
	case err == nil:
		saved = h.check(g, fo, where+": reopened")
		g.Close()
	case isAuthError(err) && h.b.touchedRange(0, content.HeaderSize):
		// A torn header: the whole file is detected as damaged.
		t.Logf("%s: reopening: %v", where, err)
	default:
		t.Fatalf("%s: reopening: %v (header untouched)", where, err)
	}
	h.f.Close()
	fresh := NewMemBacking()
	w := openMem(t, h.e, fresh)
	if len(saved) > 0 {
		mustWrite(t, w, saved, 0)
	}
	w.Close()
	h.b.SetBytes(fresh.Bytes())
	h.ref = saved
	if h.f, err = h.e.Open(h.b.asBacking()); err != nil {
		t.Fatalf("%s: reopening the salvage: %v", where, err)
	}
}

func oldAt(ref []byte, i int64) byte {
	if i < int64(len(ref)) {
		return ref[i]
	}
	return 0
}

func modelWrite(ref, p []byte, off int64) []byte {
	out := append([]byte(nil), ref...)
	if end := off + int64(len(p)); end > int64(len(out)) {
		out = append(out, make([]byte, end-int64(len(out)))...)
	}
	copy(out[off:], p)
	return out
}

func modelTruncate(ref []byte, size int64) []byte {
	if size <= int64(len(ref)) {
		return append([]byte(nil), ref[:size]...)
	}
	return append(append([]byte(nil), ref...), make([]byte, size-int64(len(ref)))...)
}
