package fileengine

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// closingMem is a MemBacking that counts its Close calls.
type closingMem struct {
	*MemBacking
	closes *atomic.Int64
}

func (c closingMem) Close() error {
	c.closes.Add(1)
	return nil
}

// tableState is the test's per-inode state.
type tableState struct{ f *File }

func newTestTable(t *testing.T) (*Table[*tableState], *atomic.Int64) {
	t.Helper()
	e := NewEngine(newTestSuite(t, content.AES256GCM, 4096), sequential(1))
	return NewTable[*tableState](e), new(atomic.Int64)
}

func acquire(t *Table[*tableState], key FileKey, closes *atomic.Int64, writable, forWrite bool) (*tableState, error) {
	return t.Acquire(key, closingMem{NewMemBacking(), closes}, writable, forWrite, func(f *File) *tableState {
		return &tableState{f: f}
	})
}

// TestTableRefcount: openers of one inode share one File; the File and its
// backing close with the last release and not before; a key reused after
// that gets a new File.
func TestTableRefcount(t *testing.T) {
	tab, closes := newTestTable(t)
	key := FileKey{Dev: 1, Ino: 42}
	a, err := acquire(tab, key, closes, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := acquire(tab, key, closes, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("two opens of one inode got two engine files")
	}
	if closes.Load() != 1 {
		t.Fatalf("the second open's backing was closed %d times, want 1", closes.Load())
	}
	other, err := acquire(tab, FileKey{Dev: 2, Ino: 42}, closes, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if other == a {
		t.Fatal("same inode number on another device shares the engine file")
	}
	tab.Hold(key, a)
	if got, ok := tab.Lookup(key); !ok || got != a {
		t.Fatal("Lookup did not find the open inode")
	}
	for range 3 { // Acquire, Hold, Lookup
		if err := tab.Release(key, a); err != nil {
			t.Fatal(err)
		}
		if _, err := a.f.Size(); err != nil {
			t.Fatalf("File closed before the last release: %v", err)
		}
	}
	if err := tab.Release(key, a); err != nil {
		t.Fatal(err)
	}
	if _, err := a.f.Size(); !errors.Is(err, ErrClosed) {
		t.Fatalf("File after the last release: %v, want ErrClosed", err)
	}
	if closes.Load() != 2 {
		t.Fatalf("backing closes after the last release: %d, want 2", closes.Load())
	}
	if _, ok := tab.Lookup(key); ok {
		t.Fatal("Lookup found a released inode")
	}
	if tab.Release(key, a) != nil || closes.Load() != 2 {
		t.Fatal("a release after the last one closed something")
	}
	c, err := acquire(tab, key, closes, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if c == a {
		t.Fatal("a reused key got the closed engine file")
	}
	if tab.Len() != 2 {
		t.Fatalf("Len = %d, want 2", tab.Len())
	}
}

// TestTableBusy: a writer cannot share a File on a read-only backing
// (ErrBusy, ETXTBSY in the vault); readers can, and a writer can share a
// read-write one.
func TestTableBusy(t *testing.T) {
	tab, closes := newTestTable(t)
	ro, rw := FileKey{Ino: 1}, FileKey{Ino: 2}
	if _, err := acquire(tab, ro, closes, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := acquire(tab, ro, closes, true, true); !errors.Is(err, ErrBusy) {
		t.Fatalf("writer on a read-only engine file: %v, want ErrBusy", err)
	}
	if closes.Load() != 1 {
		t.Fatalf("the refused writer's backing was closed %d times, want 1", closes.Load())
	}
	if _, err := acquire(tab, ro, closes, false, false); err != nil {
		t.Fatalf("reader on a read-only engine file: %v", err)
	}
	if _, err := acquire(tab, rw, closes, true, false); err != nil {
		t.Fatal(err)
	}
	if _, err := acquire(tab, rw, closes, true, true); err != nil {
		t.Fatalf("writer on a read-write engine file: %v", err)
	}
}

// TestTableOwner: LookupOwned finds an inode only through the owner it was
// bound to last.
func TestTableOwner(t *testing.T) {
	tab, closes := newTestTable(t)
	key := FileKey{Ino: 7}
	s, err := acquire(tab, key, closes, true, false)
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := new(int), new(int)
	if _, ok := tab.LookupOwned(key, n1); ok {
		t.Fatal("LookupOwned found an unbound inode")
	}
	tab.Bind(key, s, n1)
	if got, ok := tab.LookupOwned(key, n1); !ok || got != s {
		t.Fatal("LookupOwned did not find the inode through its owner")
	}
	tab.Bind(key, s, n2)
	if _, ok := tab.LookupOwned(key, n1); ok {
		t.Fatal("LookupOwned found the inode through its previous owner")
	}
}

// TestTableClose: Close closes every open inode; releases afterwards do
// nothing and Acquire fails with ErrClosed.
func TestTableClose(t *testing.T) {
	tab, closes := newTestTable(t)
	s, err := acquire(tab, FileKey{Ino: 1}, closes, true, false)
	if err != nil {
		t.Fatal(err)
	}
	var last atomic.Int64
	tab.OnLast = func(FileKey, *tableState) { last.Add(1) }
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.f.Size(); !errors.Is(err, ErrClosed) || closes.Load() != 1 {
		t.Fatalf("after Close: Size err %v, %d backing closes", err, closes.Load())
	}
	if err := tab.Release(FileKey{Ino: 1}, s); err != nil || closes.Load() != 1 || last.Load() != 0 {
		t.Fatalf("Release after Close: %v, %d closes, OnLast %d times", err, closes.Load(), last.Load())
	}
	if _, err := acquire(tab, FileKey{Ino: 1}, closes, true, false); !errors.Is(err, ErrClosed) || closes.Load() != 2 {
		t.Fatalf("Acquire after Close: %v (%d closes), want ErrClosed and its backing closed", err, closes.Load())
	}
}

// TestTableConcurrent acquires and releases a few inodes from many
// goroutines (run with -race): at any time every holder of an inode holds
// the same File, it is open while held, every backing is closed exactly
// once, and OnLast runs once per last release.
func TestTableConcurrent(t *testing.T) {
	tab, closes := newTestTable(t)
	var opened, lasts atomic.Int64
	tab.OnLast = func(FileKey, *tableState) { lasts.Add(1) }
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				key := FileKey{Ino: uint64((g + i) % 3)}
				s, err := tab.Acquire(key, closingMem{NewMemBacking(), closes}, true, false, func(f *File) *tableState {
					opened.Add(1)
					return &tableState{f: f}
				})
				if err != nil {
					errs <- err
					return
				}
				if got, ok := tab.Lookup(key); !ok || got != s {
					errs <- errors.New("a held inode has another engine file")
					return
				}
				if _, err := s.f.Size(); err != nil {
					errs <- err
					return
				}
				tab.Release(key, s)
				if err := tab.Release(key, s); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if tab.Len() != 0 {
		t.Fatalf("%d inodes left open", tab.Len())
	}
	if closes.Load() != 16*300 {
		t.Fatalf("%d backing closes for %d acquires", closes.Load(), 16*300)
	}
	// Files opened by a loser of a race are closed without OnLast.
	if lasts.Load() > opened.Load() || lasts.Load() == 0 {
		t.Fatalf("OnLast ran %d times for %d engine files", lasts.Load(), opened.Load())
	}
}

// gatedMem is a closingMem whose Stat (the first thing Engine.Open does)
// waits for a gate, to hold an Acquire between its two critical sections.
type gatedMem struct {
	closingMem
	entered chan<- struct{}
	gate    <-chan struct{}
}

func (g gatedMem) Stat() (os.FileInfo, error) {
	g.entered <- struct{}{}
	<-g.gate
	return g.closingMem.Stat()
}

// TestTableOpenRace: an Acquire that opened its File while another Acquire
// of the same inode won shares the winner's File and closes its own.
func TestTableOpenRace(t *testing.T) {
	tab, closes := newTestTable(t)
	key := FileKey{Ino: 5}
	entered, gate := make(chan struct{}), make(chan struct{})
	type result struct {
		s   *tableState
		err error
	}
	done := make(chan result)
	go func() {
		b := gatedMem{closingMem{NewMemBacking(), closes}, entered, gate}
		s, err := tab.Acquire(key, b, true, false, func(f *File) *tableState { return &tableState{f: f} })
		done <- result{s, err}
	}()
	<-entered // the slow Acquire is opening its File, outside the lock
	winner, err := acquire(tab, key, closes, true, false)
	if err != nil {
		t.Fatal(err)
	}
	close(gate)
	late := <-done
	if late.err != nil {
		t.Fatal(late.err)
	}
	if late.s != winner {
		t.Fatal("the late Acquire replaced the open inode's engine file")
	}
	if closes.Load() != 1 {
		t.Fatalf("backing closes: %d, want 1 (the late Acquire's)", closes.Load())
	}
	tab.Release(key, winner)
	if _, err := winner.f.Size(); err != nil {
		t.Fatalf("the shared File closed while the late opener holds it: %v", err)
	}
}

// headerHeldMem is a closingMem whose first ReadAt, once done, tells read and
// waits for gate: an Acquire held between reading a header and taking
// the table's lock.
type headerHeldMem struct {
	closingMem
	once       *sync.Once
	read, gate chan struct{}
}

func (g headerHeldMem) ReadAt(p []byte, off int64) (int, error) {
	n, err := g.closingMem.ReadAt(p, off)
	g.once.Do(func() {
		close(g.read)
		<-g.gate
	})
	return n, err
}

// TestTableAcquireAfterOtherCameAndWent: an Acquire that read the file's
// header and size while another opener's File of the inode was inserted,
// changed the file and was released must not insert what it read (a
// stale size or header; with binding, a rename's place check then failed
// with EIO: forwardfs.TestBoundOpenRacingRename).
func TestTableAcquireAfterOtherCameAndWent(t *testing.T) {
	tab, closes := newTestTable(t)
	key := FileKey{Dev: 1, Ino: 7}
	m := NewMemBacking()
	mk := func(f *File) *tableState { return &tableState{f: f} }
	first, err := tab.Acquire(key, closingMem{m, closes}, true, true, mk)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, first.f, []byte("old contents"), 0)
	if err := tab.Release(key, first); err != nil {
		t.Fatal(err)
	}

	g := headerHeldMem{closingMem{m, closes}, new(sync.Once), make(chan struct{}), make(chan struct{})}
	type result struct {
		s   *tableState
		err error
	}
	slow := make(chan result)
	go func() {
		s, err := tab.Acquire(key, g, true, true, mk)
		slow <- result{s, err}
	}()
	<-g.read // the slow opener has read the old header and size
	other, err := tab.Acquire(key, closingMem{m, closes}, true, true, mk)
	if err != nil {
		t.Fatal(err)
	}
	newer := make([]byte, 10000)
	mustWrite(t, other.f, newer, 0)
	if err := tab.Release(key, other); err != nil {
		t.Fatal(err)
	}
	close(g.gate)
	r := <-slow
	if r.err != nil {
		t.Fatal(r.err)
	}
	if size, err := r.s.f.Size(); err != nil || size != int64(len(newer)) {
		t.Fatalf("the slow opener's File has size %d (%v), want %d: it kept what it read before the other File came and went", size, err, len(newer))
	}
	if err := tab.Release(key, r.s); err != nil {
		t.Fatal(err)
	}
	if tab.opening != nil && (len(tab.opening) != 0 || len(tab.gone) != 0) {
		t.Fatalf("bookkeeping left after the last Acquire: opening %v gone %v", tab.opening, tab.gone)
	}
}
