package fileengine

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
)

// faultKind is one way a backing call fails on purpose.
type faultKind int

const (
	faultEIO faultKind = iota
	faultENOSPC
	faultEDQUOT
	faultEINTR
	faultShortErr // a write stores a prefix, then fails with an errno (a short pwrite, then an error)
	faultShortNil // a write stores a prefix and reports it without an error (a broken io.WriterAt)
	faultKinds
)

var faultErrnos = [...]syscall.Errno{faultEIO: syscall.EIO, faultENOSPC: syscall.ENOSPC, faultEDQUOT: syscall.EDQUOT, faultEINTR: syscall.EINTR}

// faultBacking is a MemBacking on a disk that fails on purpose: while
// armed, each call fails with probability rate, with an errno or as a short
// write chosen by a seeded generator, so a failing run is replayed by its
// seed. It records the backing ranges each operation tried to change
// (touched), which is what a failed operation may leave torn. With reserve
// set it also offers ReserveSpace, so the engine's reserve-first path is
// exercised (and failed) too.
type faultBacking struct {
	*MemBacking
	reserve bool

	mu       sync.Mutex // the engine's pipelined writes call from another goroutine
	r        *rand.Rand
	rate     float64
	armed    bool
	injected []error // the errors handed out since the last reset
	shortNil bool    // a short write without an error was handed out
	touched  [][2]int64
}

func newFaultBacking(seed uint64, rate float64, reserve bool) *faultBacking {
	return &faultBacking{MemBacking: NewMemBacking(), reserve: reserve, r: rand.New(rand.NewPCG(seed, 0xfa17)), rate: rate}
}

// reset forgets what the last operation touched and was handed, and arms
// or disarms the faults.
func (b *faultBacking) reset(armed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed, b.injected, b.shortNil, b.touched = armed, nil, false, nil
}

// disarm stops the faults and keeps the records of the last operation.
func (b *faultBacking) disarm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = false
}

// fault decides whether this call fails and how; writes may be short.
func (b *faultBacking) fault(write bool) (faultKind, bool) {
	if !b.armed || b.r.Float64() >= b.rate {
		return 0, false
	}
	n := faultShortErr
	if write {
		n = faultKinds
	}
	return faultKind(b.r.IntN(int(n))), true
}

func (b *faultBacking) errnoFor(k faultKind) error {
	err := faultErrnos[k]
	b.injected = append(b.injected, err)
	return err
}

func (b *faultBacking) WriteAt(p []byte, off int64) (int, error) {
	b.mu.Lock()
	b.touched = append(b.touched, [2]int64{off, off + int64(len(p))})
	k, ok := b.fault(true)
	var short int
	var err error
	if ok {
		switch k {
		case faultShortErr:
			short = b.r.IntN(len(p) + 1)
			err = b.errnoFor(faultKind(b.r.IntN(int(faultEINTR)))) // EIO, ENOSPC or EDQUOT after the prefix
		case faultShortNil:
			short = b.r.IntN(len(p))
			b.shortNil = true
		default:
			err = b.errnoFor(k)
		}
	}
	b.mu.Unlock()
	if !ok {
		return b.MemBacking.WriteAt(p, off)
	}
	if short > 0 {
		b.MemBacking.WriteAt(p[:short], off)
	}
	return short, err
}

func (b *faultBacking) ReadAt(p []byte, off int64) (int, error) {
	b.mu.Lock()
	k, ok := b.fault(false)
	var err error
	if ok {
		err = b.errnoFor(k)
	}
	b.mu.Unlock()
	if !ok {
		return b.MemBacking.ReadAt(p, off)
	}
	// A failed read may have filled part of p: leave bytes there that the
	// engine must not pass on.
	for i := range p {
		p[i] = 0xEE
	}
	return 0, err
}

func (b *faultBacking) Truncate(size int64) error {
	b.mu.Lock()
	cur := int64(len(b.MemBacking.Bytes()))
	b.touched = append(b.touched, [2]int64{min(size, cur), math.MaxInt64})
	k, ok := b.fault(false)
	var err error
	if ok {
		err = b.errnoFor(k)
	}
	b.mu.Unlock()
	if ok {
		return err
	}
	return b.MemBacking.Truncate(size)
}

func (b *faultBacking) Sync() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k, ok := b.fault(false); ok {
		return b.errnoFor(k)
	}
	return nil
}

func (b *faultBacking) Stat() (os.FileInfo, error) {
	b.mu.Lock()
	k, ok := b.fault(false)
	var err error
	if ok {
		err = b.errnoFor(k)
	}
	b.mu.Unlock()
	if ok {
		return nil, err
	}
	return b.MemBacking.Stat()
}

// reservingFaultBacking adds ReserveSpace, which only ever fails on purpose
// (memory does not fill up).
type reservingFaultBacking struct{ *faultBacking }

func (b reservingFaultBacking) ReserveSpace(off, length int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k, ok := b.fault(false); ok {
		if k == faultEINTR || k == faultEIO {
			k = faultENOSPC
		}
		return b.errnoFor(k)
	}
	return nil
}

// asBacking returns the Backing the engine sees.
func (b *faultBacking) asBacking() Backing {
	if b.reserve {
		return reservingFaultBacking{b}
	}
	return b
}

// touchedRange reports whether the last operation tried to change any
// backing byte in [from, to).
func (b *faultBacking) touchedRange(from, to int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.touched {
		if t[0] < to && from < t[1] {
			return true
		}
	}
	return false
}

// explains reports whether err is what the caller of a failed operation
// should see: one of the errnos handed out during it, or io.ErrShortWrite
// for a short write without an error.
func (b *faultBacking) explains(err error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, inj := range b.injected {
		if errors.Is(err, inj) {
			return true
		}
	}
	return b.shortNil && errors.Is(err, io.ErrShortWrite)
}

func (b *faultBacking) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("injected %v, short-nil %v, touched %v", b.injected, b.shortNil, b.touched)
}
