package fileengine

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// reservingBacking records the space reserved and punched, and checks that
// no write lands past the end of the file outside a reserved range: the
// guarantee reserveGrowth keeps (a full disk fails a growing write before
// any byte changes). limit, if set, fails a reservation longer than it with
// ENOSPC, like a nearly full disk.
type reservingBacking struct {
	*MemBacking
	t *testing.T

	mu       sync.Mutex
	reserved [][2]int64
	punched  [][2]int64
	calls    int
	limit    int64
}

func (b *reservingBacking) ReserveSpace(off, length int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
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
	// The header of a new file (offset 0) is written before any chunk and
	// is not reserved (nothing to lose: the file was empty).
	if end := off + int64(len(p)); off > 0 && end > size && !b.covered(max(off, size), end) {
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
