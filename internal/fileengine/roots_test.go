package fileengine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// rootsOff turns the roots tests' engine into today's bound engine (v2
// headers, no tag blocks): set it to true to see the tamper tests fail
// on the code before file roots.
const rootsOff = false

// testPlace is where the roots tests' files live.
var testPlace = Place{ParentID: bytes.Repeat([]byte{0x44}, 16), EncName: "file"}

// compactRoots makes newRootsEngine's engines use the compact layout
// (CompactRoots); TestCompactRootsSuite sets it while it runs the roots
// tests again. The core tests do not run in parallel.
var compactRoots = false

// trimmedLeaves makes newRootsEngine's engines write roots with trimmed
// leaves (TrimmedLeaves); TestTrimmedLeavesSuite sets it while it runs
// the roots tests again.
var trimmedLeaves = false

// newRootsEngine is an engine with location binding and file roots.
func newRootsEngine(tb testing.TB, alg content.Algorithm, chunkSize int, opts Options) *Engine {
	tb.Helper()
	ck, hk := testKeys()
	mk := func(alg content.Algorithm, cs int, ck, hk []byte) (*content.Suite, error) {
		return content.NewRootsSuiteWith(alg, cs, ck, hk, content.RootsOptions{Compact: compactRoots, Trimmed: trimmedLeaves})
	}
	if rootsOff {
		mk = content.NewBoundSuite
	}
	s, err := mk(alg, chunkSize, ck, hk)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := bind.New(bytes.Repeat([]byte{0x33}, bind.KeySize))
	if err != nil {
		tb.Fatal(err)
	}
	opts.Binder = b
	return NewEngine(s, opts)
}

func openRoots(tb testing.TB, e *Engine, m *MemBacking) *File {
	tb.Helper()
	f, err := e.OpenAt(m, testPlace)
	if err != nil {
		tb.Fatalf("OpenAt: %v", err)
	}
	return f
}

func mustClose(tb testing.TB, f *File) {
	tb.Helper()
	if err := f.Close(); err != nil {
		tb.Fatalf("Close: %v", err)
	}
}

// readBack opens m and checks that it reads want and is clean.
func readBack(tb testing.TB, e *Engine, m *MemBacking, want []byte) {
	tb.Helper()
	f := openRoots(tb, e, m)
	defer mustClose(tb, f)
	got, err := readAll(f)
	if err != nil {
		tb.Fatalf("read back: %v", err)
	}
	if !bytes.Equal(got, want) {
		tb.Fatalf("read back %d bytes, differ from the %d written", len(got), len(want))
	}
	if f.RootDirty() {
		tb.Fatal("file is DIRTY after a clean close")
	}
}

// TestRootsModel runs random writes, truncates and punches through a
// roots engine against a plaintext model, closing (clean) and reopening
// now and then, with files spanning several tag-block groups (4 KiB
// chunks: a group is 1 MiB).
func TestRootsModel(t *testing.T) {
	for _, alg := range testAlgorithms {
		for _, par := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/parallel=%v", alg, par), func(t *testing.T) {
				opts := sequential(3)
				if par {
					opts = parallel(3)
				}
				e := newRootsEngine(t, alg, 4<<10, opts)
				r := rand.New(rand.NewPCG(5, uint64(len(alg))))
				m := NewMemBacking()
				var model []byte
				f := openRoots(t, e, m)
				const maxSize = 3<<20 + 12345
				for step := range 120 {
					switch op := r.IntN(10); {
					case op < 5:
						off := r.Int64N(maxSize)
						n := r.IntN(300 << 10)
						if r.IntN(4) == 0 {
							n = r.IntN(100)
						}
						p := randomBytes(r, n)
						mustWrite(t, f, p, off)
						if end := off + int64(n); end > int64(len(model)) {
							model = append(model, make([]byte, end-int64(len(model)))...)
						}
						copy(model[off:], p)
					case op < 7:
						size := r.Int64N(maxSize)
						if r.IntN(5) == 0 {
							size = 0
						}
						if err := f.Truncate(size); err != nil {
							t.Fatalf("step %d: Truncate(%d): %v", step, size, err)
						}
						if size < int64(len(model)) {
							model = model[:size]
						} else {
							model = append(model, make([]byte, size-int64(len(model)))...)
						}
					case op < 8 && len(model) > 0:
						off := r.Int64N(int64(len(model)))
						n := r.Int64N(int64(len(model))-off) + 1
						if err := f.PunchHole(off, n); err != nil {
							t.Fatalf("step %d: PunchHole: %v", step, err)
						}
						clear(model[off : off+n])
					case op < 9:
						if err := f.Sync(); err != nil {
							t.Fatalf("step %d: Sync: %v", step, err)
						}
						if f.RootDirty() {
							t.Fatalf("step %d: DIRTY after Sync", step)
						}
					default:
						mustClose(t, f)
						readBack(t, e, m, model)
						f = openRoots(t, e, m)
					}
					got, err := readAll(f)
					if err != nil {
						t.Fatalf("step %d: read: %v", step, err)
					}
					if !bytes.Equal(got, model) {
						t.Fatalf("step %d: read %d bytes, model has %d (or contents differ)", step, len(got), len(model))
					}
				}
				mustClose(t, f)
				readBack(t, e, m, model)
				if want := e.lay.cipherSize(int64(len(model))); int64(len(m.Bytes())) != want && len(model) > 0 {
					t.Fatalf("backing is %d bytes, want %d", len(m.Bytes()), want)
				}
			})
		}
	}
}

// rootsFile writes plain into a new file (clean at close) and returns it.
func rootsFile(t *testing.T, e *Engine, plain []byte) *MemBacking {
	t.Helper()
	m := NewMemBacking()
	f := openRoots(t, e, m)
	mustWrite(t, f, plain, 0)
	mustClose(t, f)
	return m
}

// rewrite writes p at off in the file of m and closes it.
func rewrite(t *testing.T, e *Engine, m *MemBacking, p []byte, off int64) {
	t.Helper()
	f := openRoots(t, e, m)
	mustWrite(t, f, p, off)
	mustClose(t, f)
}

// wantRootsError opens stored and reads it whole: the open or the read
// must fail with an authentication error and deliver no wrong byte.
func wantRootsError(t *testing.T, e *Engine, stored, want []byte) {
	t.Helper()
	f, err := e.OpenAt(NewMemBackingFrom(stored), testPlace)
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
	if err == nil || errors.Is(err, io.EOF) || !isAuthError(err) {
		t.Fatalf("read of tampered file: n=%d err=%v, want an authentication error", n, err)
	}
	checkNoGarbage(t, buf, n, want, 0)
}

// TestRootsTamper: the three gaps of v1 content that issue 7 closes, and
// mixed tag blocks. Each case reads fine on the bound engine without
// roots (rootsOff), and fails with roots.
func TestRootsTamper(t *testing.T) {
	const cs = 4 << 10
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			e := newRootsEngine(t, alg, cs, sequential(9))
			r := rand.New(rand.NewPCG(9, 9))
			t.Run("splice older version", func(t *testing.T) {
				plain := randomBytes(r, 3*cs+100)
				m := rootsFile(t, e, plain)
				old := bytes.Clone(m.Bytes())
				newer := bytes.Clone(plain)
				copy(newer[cs:], randomBytes(r, cs))
				rewrite(t, e, m, newer[cs:2*cs], cs)
				stored := bytes.Clone(m.Bytes())
				at := e.cipherOffset(1)
				copy(stored[at:at+int64(e.cipherChunk)], old[at:])
				wantRootsError(t, e, stored, newer)
			})
			t.Run("truncated to header", func(t *testing.T) {
				plain := randomBytes(r, 2*cs)
				m := rootsFile(t, e, plain)
				wantRootsError(t, e, m.Bytes()[:e.lay.header], plain)
			})
			t.Run("truncated to whole chunks", func(t *testing.T) {
				plain := randomBytes(r, 3*cs)
				m := rootsFile(t, e, plain)
				old := bytes.Clone(m.Bytes())
				// Append, then cut the backing file back to the old
				// version's length: v1 reads the older, shorter file.
				rewrite(t, e, m, randomBytes(r, cs), 3*cs)
				wantRootsError(t, e, m.Bytes()[:len(old)], plain)
			})
			t.Run("hole swapped in", func(t *testing.T) {
				// A sparse file: chunks 0 and 5 written, 1..4 holes.
				m := NewMemBacking()
				f := openRoots(t, e, m)
				a, b := randomBytes(r, cs), randomBytes(r, 100)
				mustWrite(t, f, a, 0)
				mustWrite(t, f, b, 5*cs)
				mustClose(t, f)
				want := append(append(bytes.Clone(a), make([]byte, 4*cs)...), b...)
				readBack(t, e, m, want)
				stored := bytes.Clone(m.Bytes())
				at := e.cipherOffset(0)
				clear(stored[at : at+int64(e.cipherChunk)])
				wantRootsError(t, e, stored, want)
			})
			t.Run("mixed tag blocks", func(t *testing.T) {
				// Two groups; version B changes chunk 300 (group 1).
				plain := randomBytes(r, 400*cs)
				m := rootsFile(t, e, plain)
				old := bytes.Clone(m.Bytes())
				newer := bytes.Clone(plain)
				copy(newer[300*cs:], randomBytes(r, cs))
				rewrite(t, e, m, newer[300*cs:301*cs], 300*cs)
				stored := bytes.Clone(m.Bytes())
				// Version A's tag block 1 and chunk 300 in version B.
				tb := e.lay.tagBlockOffset(1)
				copy(stored[tb:tb+content.TagBlockSize], old[tb:])
				at := e.cipherOffset(300)
				copy(stored[at:at+int64(e.cipherChunk)], old[at:])
				wantRootsError(t, e, stored, newer)
			})
		})
	}
}

// TestRootsDirtyReplay: an attacker cannot set DIRTY, but can put back a
// header the file had while DIRTY. Such a file reads with v1's
// guarantees (every chunk authentic at its index), says it is DIRTY
// (fsck reports it), and the next clean close makes it clean again.
func TestRootsDirtyReplay(t *testing.T) {
	const cs = 4 << 10
	e := newRootsEngine(t, content.AES256GCM, cs, sequential(4))
	r := rand.New(rand.NewPCG(4, 4))
	plain := randomBytes(r, 3*cs+7)
	m := rootsFile(t, e, plain)
	f := openRoots(t, e, m)
	mustWrite(t, f, []byte("new"), 10)
	copy(plain[10:], "new")
	dirtyHeader := bytes.Clone(m.Bytes()[:e.lay.header])
	mustClose(t, f)
	readBack(t, e, m, plain)

	stored := bytes.Clone(m.Bytes())
	copy(stored, dirtyHeader)
	m2 := NewMemBackingFrom(stored)
	f = openRoots(t, e, m2)
	if !f.RootDirty() {
		t.Fatal("replayed DIRTY header: RootDirty is false")
	}
	got, err := readAll(f)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("DIRTY file reads %d bytes, %v; want the plaintext", len(got), err)
	}
	// v1's guarantee still holds: a chunk moved to another index fails.
	bad := bytes.Clone(stored)
	copy(bad[e.cipherOffset(0):e.cipherOffset(1)], stored[e.cipherOffset(1):])
	readTamperedAt(t, e, bad, plain)
	// A DIRTY file with a bad chunk is not made clean: the rebuild stops.
	m3 := NewMemBackingFrom(bytes.Clone(bad))
	g := openRoots(t, e, m3)
	if err := g.RepairRoot(); !errors.Is(err, content.ErrCorruptChunk) || !g.RootDirty() {
		t.Fatalf("RepairRoot of a damaged file: %v, dirty %v", err, g.RootDirty())
	}
	g.Close()
	if err := f.RepairRoot(); err != nil {
		t.Fatalf("RepairRoot: %v", err)
	}
	mustClose(t, f)
	readBack(t, e, m2, plain)
}

// readTamperedAt is readTampered for a bound engine.
func readTamperedAt(t *testing.T, e *Engine, stored, want []byte) {
	t.Helper()
	wantRootsError(t, e, stored, want)
}

// TestRootsCrashStates: a File that writes and is dropped without Close
// (the process died) leaves a DIRTY file that reads, and is made clean by
// the next write's close or by RepairRoot.
func TestRootsCrashStates(t *testing.T) {
	const cs = 4 << 10
	e := newRootsEngine(t, content.AES256GCM, cs, sequential(6))
	r := rand.New(rand.NewPCG(6, 6))
	plain := randomBytes(r, 5*cs)
	m := rootsFile(t, e, plain)
	f := openRoots(t, e, m)
	mustWrite(t, f, randomBytes(r, 2*cs), 300*cs) // a second group, holes
	// No Close: the "crash" keeps everything written so far.
	snap := NewMemBackingFrom(bytes.Clone(m.Bytes()))
	g := openRoots(t, e, snap)
	if !g.RootDirty() {
		t.Fatal("a file written and not closed is not DIRTY")
	}
	if _, err := readAll(g); err != nil {
		t.Fatalf("DIRTY file: %v", err)
	}
	mustWrite(t, g, []byte("x"), 0)
	mustClose(t, g)
	if g2 := openRoots(t, e, snap); g2.RootDirty() {
		t.Fatal("still DIRTY after a write and a close")
	} else {
		mustClose(t, g2)
	}
	mustClose(t, f)
}

// TestRootsHeaderFields: size, gen and root are in the header, DIRTY is
// set by the first write after a clean close, and gen grows.
func TestRootsHeaderFields(t *testing.T) {
	const cs = 4 << 10
	e := newRootsEngine(t, content.AES256GCM, cs, sequential(8))
	m := rootsFile(t, e, make([]byte, cs+1))
	h, err := e.suite.ParseHeader(m.Bytes()[:e.lay.header])
	if err != nil {
		t.Fatal(err)
	}
	if h.Flags != e.suite.NewLeaves().Flag() || h.Size != cs+1 || h.Gen == 0 || h.Root == ([content.RootSize]byte{}) {
		t.Fatalf("clean header: flags %#x size %d gen %d root %x", h.Flags, h.Size, h.Gen, h.Root)
	}
	f := openRoots(t, e, m)
	mustWrite(t, f, []byte{1}, 0)
	d, err := e.suite.ParseHeader(m.Bytes()[:e.lay.header])
	if err != nil {
		t.Fatal(err)
	}
	// DIRTY keeps the old root, and the rule it was made with.
	if d.Flags != content.FlagDirty|h.Flags || d.Gen != h.Gen+1 || d.Root != h.Root {
		t.Fatalf("after a write: flags %#x gen %d (was %d)", d.Flags, d.Gen, h.Gen)
	}
	mustClose(t, f)
	c, _ := e.suite.ParseHeader(m.Bytes()[:e.lay.header])
	if c.Flags != e.suite.NewLeaves().Flag() || c.Gen != h.Gen+2 || c.Root == h.Root {
		t.Fatalf("after close: flags %#x gen %d root changed %v", c.Flags, c.Gen, c.Root != h.Root)
	}
}

// TestRootsLargeRequests: requests larger than the bulk path's window
// (pipelined reads and writes), crossing tag-block groups, at aligned and
// unaligned offsets, read back whole and in pieces after a clean close.
func TestRootsLargeRequests(t *testing.T) {
	for _, alg := range testAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			e := newRootsEngine(t, alg, 4<<10, Options{Rand: seededRand(2), Parallel: ParallelOptions{Enabled: true, MaxWorkers: 3, MinChunks: 2}})
			r := rand.New(rand.NewPCG(2, 2))
			m := NewMemBacking()
			f := openRoots(t, e, m)
			model := randomBytes(r, 6<<20+100)
			mustWrite(t, f, model, 0)
			patch := randomBytes(r, 5<<20)
			mustWrite(t, f, patch, 5000)
			copy(model[5000:], patch)
			mustClose(t, f)
			readBack(t, e, m, model)
			f = openRoots(t, e, m)
			defer mustClose(t, f)
			for _, piece := range []int{4096, 1 << 20, 5<<20 + 3} {
				buf := make([]byte, piece)
				for off := 0; off < len(model); off += piece {
					n, err := f.ReadAt(buf, int64(off))
					if err != nil && !errors.Is(err, io.EOF) {
						t.Fatalf("ReadAt(%d, %d): %v", piece, off, err)
					}
					if !bytes.Equal(buf[:n], model[off:off+n]) {
						t.Fatalf("ReadAt(%d, %d): wrong bytes", piece, off)
					}
				}
			}
		})
	}
}
