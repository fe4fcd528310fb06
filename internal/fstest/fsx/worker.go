package fsx

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// opLog keeps the operations applied so far for the failure report.
type opLog struct{ ops []op }

func (l *opLog) add(o op) { l.ops = append(l.ops, o) }

// tail formats the last n operations.
func (l *opLog) tail(n int) string {
	start := max(0, len(l.ops)-n)
	var b strings.Builder
	fmt.Fprintf(&b, "last %d of %d operations:\n", len(l.ops)-start, len(l.ops))
	for _, o := range l.ops[start:] {
		b.WriteString("  " + o.String() + "\n")
	}
	return b.String()
}

// worker applies generated operations to a pair and checks after each.
type worker struct {
	p        *pair
	g        *gen
	reg      region
	opts     Options
	log      opLog
	count    [numOpKinds]int
	lastSize int64
}

func newWorker(p *pair, seed int64, opts Options, reg region) *worker {
	return &worker{p: p, g: newGen(seed, reg, opts, p.name), reg: reg, opts: opts}
}

// counts summarises how many of each kind ran.
func (w *worker) counts() string {
	var parts []string
	for k := range numOpKinds {
		if w.count[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, w.count[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// run applies n operations, then compares the whole region.
func (w *worker) run(n int) error {
	for i := 1; i <= n; i++ {
		if err := w.step(i); err != nil {
			return err
		}
	}
	return w.checkRegion()
}

// step draws and applies operation number i and checks the result.
func (w *worker) step(i int) error {
	size, err := w.p.size()
	if err != nil {
		return fmt.Errorf("before op %d: %w", i, err)
	}
	o := w.g.next(i, size)
	w.log.add(o)
	w.count[o.kind]++
	if err := w.apply(o, size); err != nil {
		return fmt.Errorf("op %s: %w", o, err)
	}
	if w.lastSize, err = w.p.size(); err != nil {
		return fmt.Errorf("after op %s: %w", o, err)
	}
	if err := w.check(o, i); err != nil {
		return fmt.Errorf("after op %s: %w", o, err)
	}
	return nil
}

// check compares the touched range (with a margin, to catch damage to the
// neighbouring bytes of a read-modify-write) and, every FullCheck ops, the
// whole region.
func (w *worker) check(o op, i int) error {
	if i%w.opts.FullCheck == 0 {
		return w.checkRegion()
	}
	if o.len == 0 {
		return nil
	}
	const margin = 4097
	lo := max(w.reg.lo, o.off-margin)
	hi := min(w.reg.hi, o.off+o.len+margin)
	return w.p.compareRange(lo, hi-lo)
}

// checkRegion compares everything the worker may have touched.
func (w *worker) checkRegion() error {
	hi := w.reg.hi
	if w.reg.resize {
		hi = w.lastSize
	}
	return w.p.compareRange(w.reg.lo, hi-w.reg.lo)
}

// both runs f on the test and the reference side. An error on the
// reference side is a broken setup; on the test side alone it is a failure
// of the filesystem under test, with a hint at the option that exempts it.
func (w *worker) both(what string, f func(fd int) error) error {
	errRef := f(w.p.fds[1])
	if errRef != nil {
		return fmt.Errorf("%s on the reference file failed (the reference dir must support it): %w", what, errRef)
	}
	if err := f(w.p.fds[0]); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("%s not supported by the filesystem under test (exempt it with fsx.Options): %w", what, err)
		}
		return fmt.Errorf("%s on the test file: %w", what, err)
	}
	return nil
}

// testOnly runs f on the test side alone.
func (w *worker) testOnly(what string, f func(fd int) error) error {
	if err := f(w.p.fds[0]); err != nil {
		return fmt.Errorf("%s on the test file: %w", what, err)
	}
	return nil
}

// apply runs one operation on both sides.
func (w *worker) apply(o op, size int64) error {
	switch o.kind {
	case opWrite:
		buf := make([]byte, o.len)
		pattern(buf, o.n, o.off)
		return w.both("pwrite", func(fd int) error { return pwriteFull(fd, buf, o.off) })
	case opRead:
		return w.p.compareRange(o.off, o.len)
	case opTruncate:
		return w.both("ftruncate", func(fd int) error { return unix.Ftruncate(fd, o.off) })
	case opFallocate:
		return w.both("fallocate", func(fd int) error { return unix.Fallocate(fd, 0, o.off, o.len) })
	case opKeepSize:
		return w.both("fallocate KEEP_SIZE", func(fd int) error { return unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, o.off, o.len) })
	case opPunchHole:
		return w.both("fallocate PUNCH_HOLE", func(fd int) error {
			return unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, o.off, o.len)
		})
	case opMapRead:
		return w.mapRead(o, size)
	case opMapWrite:
		return w.mapWrite(o, size)
	case opRename:
		for s := range 2 {
			if err := os.Rename(w.p.path(s), w.p.dirs[s]+"/"+o.name); err != nil {
				return fmt.Errorf("rename %s file: %w", sideName(s), err)
			}
		}
		w.p.name = o.name
		return nil
	case opReopen:
		return w.p.reopen()
	case opFsync:
		// Only the test side: syncing the reference proves nothing and is
		// slow when the reference is on a disk.
		return w.testOnly("fsync", unix.Fsync)
	case opFdatasync:
		return w.testOnly("fdatasync", unix.Fdatasync)
	}
	return fmt.Errorf("unknown op kind %d", o.kind)
}

// mapRead reads [off, off+len) through a shared mapping of the test file and
// compares it with a pread of the reference.
func (w *worker) mapRead(o op, size int64) error {
	if o.len == 0 || size == 0 {
		return nil
	}
	m, start, err := mapRange(w.p.fds[0], o.off, o.len, unix.PROT_READ)
	if err != nil {
		return fmt.Errorf("mmap test file: %w", err)
	}
	defer unix.Munmap(m)
	ref := make([]byte, o.len)
	n, err := preadFull(w.p.fds[1], ref, o.off)
	if err != nil {
		return fmt.Errorf("read ref file: %w", err)
	}
	return diff(m[start:start+int64(n)], ref[:n], o.off)
}

// mapWrite writes the op's pattern through a shared mapping of the test file
// (then msync) and with pwrite to the reference.
func (w *worker) mapWrite(o op, size int64) error {
	if o.len == 0 || size == 0 {
		return nil
	}
	buf := make([]byte, o.len)
	pattern(buf, o.n, o.off)
	if err := pwriteFull(w.p.fds[1], buf, o.off); err != nil {
		return fmt.Errorf("pwrite ref file: %w", err)
	}
	m, start, err := mapRange(w.p.fds[0], o.off, o.len, unix.PROT_READ|unix.PROT_WRITE)
	if err != nil {
		return fmt.Errorf("mmap test file: %w", err)
	}
	copy(m[start:], buf)
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		unix.Munmap(m)
		return fmt.Errorf("msync test file: %w", err)
	}
	return unix.Munmap(m)
}

// mapRange maps the pages covering [off, off+n) and returns the mapping and
// the index of off in it.
func mapRange(fd int, off, n int64, prot int) ([]byte, int64, error) {
	page := int64(os.Getpagesize())
	start := off / page * page
	m, err := unix.Mmap(fd, start, int(off+n-start), prot, unix.MAP_SHARED)
	return m, off - start, err
}
