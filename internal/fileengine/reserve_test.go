package fileengine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// reservingBacking records the space reserved and punched, and checks that
// no write lands past the end of the file outside a reserved range: the
// guarantee reserveGrowth keeps (a full disk fails a growing write before
// any byte changes). The writes of a file that was empty are not checked
// until the next reservation (fromEmpty): the first write of a new file
// reserves nothing (reserveGrowth). limit, if set, fails a reservation
// longer than it with ENOSPC, like a nearly full disk.
type reservingBacking struct {
	*MemBacking
	t *testing.T

	mu       sync.Mutex
	reserved [][2]int64
	punched  [][2]int64
	calls    int
	limit    int64
	// fromEmpty: a write found the file empty, and no reservation has
	// been made since.
	fromEmpty bool
}

func (b *reservingBacking) ReserveSpace(off, length int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	b.fromEmpty = false
	if b.limit > 0 && length > b.limit {
		return syscall.ENOSPC
	}
	b.reserved = append(b.reserved, [2]int64{off, off + length})
	return nil
}

func (b *reservingBacking) PunchHole(off, length int64) error {
	b.mu.Lock()
	b.punched = append(b.punched, [2]int64{off, off + length})
	b.mu.Unlock()
	return nil
}

func (b *reservingBacking) WriteAt(p []byte, off int64) (int, error) {
	fi, err := b.MemBacking.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	b.mu.Lock()
	b.fromEmpty = b.fromEmpty || size == 0
	fromEmpty := b.fromEmpty
	b.mu.Unlock()
	if end := off + int64(len(p)); !fromEmpty && end > size && !b.covered(max(off, size), end) {
		b.t.Errorf("write [%d, %d) past the end %d is not reserved (reserved %v)", off, end, size, b.reserved)
	}
	return b.MemBacking.WriteAt(p, off)
}

func (b *reservingBacking) covered(from, to int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.reserved {
		if r[0] <= from && to <= r[1] {
			return true
		}
	}
	return false
}

// TestReserveAhead: a file written sequentially in 128 KiB requests
// reserves once per step, not once per write, every byte it stores past
// its end is reserved first, and Close gives back the reserve past the end.
func TestReserveAhead(t *testing.T) {
	const cs = 16 << 10
	e := NewEngine(newTestSuite(t, content.AES256GCM, cs), sequential(3))
	r := rand.New(rand.NewPCG(3, 3))
	data := randomBytes(r, 24<<20+100)
	b := &reservingBacking{MemBacking: NewMemBacking(), t: t}
	f, err := e.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	const req = 128 << 10
	writes := 0
	for off := 0; off < len(data); off += req {
		mustWrite(t, f, data[off:min(off+req, len(data))], int64(off))
		writes++
	}
	// Below reserveAheadMin one call per write (8 of them), then steps of
	// a quarter of the file up to 8 MiB: a few dozen calls, not 193.
	if b.calls > writes/3 {
		t.Errorf("%d reservations for %d growing writes; want a fraction", b.calls, writes)
	}
	end := e.lay.cipherSize(int64(len(data)))
	if f.space.reservedTo <= end {
		t.Fatalf("nothing reserved past the end (%d <= %d)", f.space.reservedTo, end)
	}
	reservedTo := f.space.reservedTo
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if len(b.punched) != 1 || b.punched[0] != [2]int64{end, reservedTo} {
		t.Errorf("Close punched %v, want [[%d %d]]", b.punched, end, reservedTo)
	}
	g := openMem(t, e, b.MemBacking)
	got, err := readAll(g)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v, equal %v", err, bytes.Equal(got, data))
	}
	t.Logf("%d growing writes, %d reservations", writes, b.calls)
}

// TestReserveAheadNearlyFull: when the step does not fit, exactly what the
// write needs is reserved, so a nearly full disk refuses no write that fits.
func TestReserveAheadNearlyFull(t *testing.T) {
	const cs = 16 << 10
	e := NewEngine(newTestSuite(t, content.AES256GCM, cs), sequential(4))
	r := rand.New(rand.NewPCG(4, 4))
	data := randomBytes(r, 3<<20)
	b := &reservingBacking{MemBacking: NewMemBacking(), t: t, limit: 200 << 10}
	f, err := e.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 128 << 10 {
		mustWrite(t, f, data[off:off+128<<10], int64(off))
	}
	if f.space.reservedTo != e.lay.cipherSize(int64(len(data))) {
		t.Errorf("reservedTo %d, want exactly the end %d", f.space.reservedTo, e.lay.cipherSize(int64(len(data))))
	}
	f.Close()
	if len(b.punched) != 0 {
		t.Errorf("punched %v with nothing reserved past the end", b.punched)
	}
}

// TestReserveAheadResetByCut: a cut frees what lay past the new end, so the
// next growing write reserves again instead of trusting the old step.
func TestReserveAheadResetByCut(t *testing.T) {
	const cs = 16 << 10
	e := NewEngine(newTestSuite(t, content.AES256GCM, cs), sequential(5))
	r := rand.New(rand.NewPCG(5, 5))
	b := &reservingBacking{MemBacking: NewMemBacking(), t: t}
	f, err := e.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, randomBytes(r, 2<<20), 0)
	mustWrite(t, f, randomBytes(r, 128<<10), 2<<20)
	if f.space.reservedTo == 0 {
		t.Fatal("no step reserved")
	}
	if err := f.Truncate(1 << 20); err != nil {
		t.Fatal(err)
	}
	if f.space.reservedTo != 0 {
		t.Fatalf("reservedTo %d after a cut, want 0", f.space.reservedTo)
	}
	calls := b.calls
	mustWrite(t, f, randomBytes(r, 4096), 1<<20)
	if b.calls == calls {
		t.Error("the write after a cut reserved nothing")
	}
	f.Close()
}

// TestReserveNotFromEmpty: the first write of a new file reserves nothing
// (the file was empty: a failed write empties it again), the next growing
// write reserves its bytes, and a first write that finds the disk full
// leaves the file empty and the next one works.
func TestReserveNotFromEmpty(t *testing.T) {
	const cs = 16 << 10
	r := rand.New(rand.NewPCG(6, 6))
	v1 := NewEngine(newTestSuite(t, content.AES256GCM, cs), sequential(6))
	compactRoots, trimmedLeaves = true, true // encryptfs init's layout
	v2 := newRootsEngine(t, content.AES256GCM, cs, sequential(6))
	compactRoots, trimmedLeaves = false, false
	for _, c := range []struct {
		name string
		e    *Engine
		open func(b Backing) (*File, error)
	}{
		{"v1", v1, v1.Open},
		{"v2", v2, func(b Backing) (*File, error) { return v2.OpenAt(b, testPlace) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			open := func(b Backing) *File {
				t.Helper()
				f, err := c.open(b)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			b := &reservingBacking{MemBacking: NewMemBacking(), t: t}
			f := open(b)
			first := randomBytes(r, 10240) // tar's record
			mustWrite(t, f, first, 0)
			if b.calls != 0 {
				t.Errorf("the first write of a new file made %d reservations", b.calls)
			}
			second := randomBytes(r, 3*cs)
			mustWrite(t, f, second, int64(len(first))) // checked: reserved before it lands
			if b.calls != 1 {
				t.Errorf("the second, growing write made %d reservations, want 1", b.calls)
			}
			mustClose(t, f)
			g := open(b.MemBacking)
			if got, err := readAll(g); err != nil || !bytes.Equal(got, append(first, second...)) {
				t.Fatalf("read back: %v", err)
			}
			mustClose(t, g)

			// A full disk at the first write of a new file: it fails and
			// the backing file is empty again, then a write goes through.
			full := &fullBacking{MemBacking: NewMemBacking(), limit: 100}
			h := open(full)
			if _, err := h.WriteAt(first, 0); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("write on a full disk: %v, want ENOSPC", err)
			}
			if n := len(full.Bytes()); n != 0 {
				t.Errorf("after the failed first write the backing file holds %d bytes", n)
			}
			full.limit = 1 << 40
			mustWrite(t, h, first, 0)
			mustClose(t, h)
			k := open(full.MemBacking)
			if got, err := readAll(k); err != nil || !bytes.Equal(got, first) {
				t.Fatalf("read back after the retry: %v", err)
			}
			mustClose(t, k)
		})
	}
}
