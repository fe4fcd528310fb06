package fsx

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// opKind is one kind of operation.
type opKind int

const (
	opWrite opKind = iota
	opRead
	opTruncate
	opFallocate // mode 0: allocates and may extend the size
	opKeepSize  // FALLOC_FL_KEEP_SIZE: allocates, never changes size or data
	opPunchHole // FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE: zeros a range
	opMapRead   // shared mmap, read
	opMapWrite  // shared mmap, write within the current size
	opRename    // rename within the directory, descriptors stay open
	opReopen    // close and reopen both files
	opFsync     // fsync
	opFdatasync // fdatasync
	numOpKinds
)

func (k opKind) String() string {
	return [...]string{"write", "read", "truncate", "fallocate", "fallocate-keep-size", "punch-hole",
		"mapread", "mapwrite", "rename", "reopen", "fsync", "fdatasync"}[k]
}

// op is one generated operation.
type op struct {
	n    int // sequence number, from 1
	kind opKind
	off  int64
	len  int64
	name string // rename target
}

func (o op) String() string {
	switch o.kind {
	case opTruncate:
		return fmt.Sprintf("#%d %s to %d", o.n, o.kind, o.off)
	case opRename:
		return fmt.Sprintf("#%d %s to %.40s (%d bytes)", o.n, o.kind, o.name, len(o.name))
	case opReopen, opFsync, opFdatasync:
		return fmt.Sprintf("#%d %s", o.n, o.kind)
	}
	return fmt.Sprintf("#%d %s [%d, %d) len %d", o.n, o.kind, o.off, o.off+o.len, o.len)
}

// region is the byte range a worker may touch and whether it may change
// the file size (a shared file's disjoint regions may not).
type region struct {
	lo, hi int64
	resize bool
}

// boundaries are the chunk-like sizes offsets and lengths cluster around:
// a page, the default encrypted chunk, and a large-chunk / huge request.
func boundaries() [3]int64 { return [3]int64{4096, 65536, 1 << 20} }

// gen draws operations from a seeded PCG stream: the same seed and options
// always give the same sequence.
type gen struct {
	rng    *rand.Rand
	reg    region
	opts   Options
	prefix string // rename targets start with it, so that workers sharing a directory never collide
}

func newGen(seed int64, reg region, opts Options, prefix string) *gen {
	return &gen{rng: rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15)), reg: reg, opts: opts, prefix: prefix}
}

// weight of each kind; zero disables it.
func (g *gen) weight(k opKind) int {
	switch k {
	case opWrite:
		return 30
	case opRead:
		return 15
	case opTruncate:
		if !g.reg.resize {
			return 0
		}
		return 8
	case opFallocate:
		if g.opts.NoFallocate {
			return 0
		}
		return 4
	case opKeepSize:
		if g.opts.NoKeepSize {
			return 0
		}
		return 4
	case opPunchHole:
		if g.opts.NoPunchHole {
			return 0
		}
		return 6
	case opMapRead, opMapWrite:
		if g.opts.NoMmap {
			return 0
		}
		return 4
	case opRename:
		if !g.reg.resize {
			return 0 // the shared file keeps its name
		}
		return 3
	case opReopen, opFsync:
		return 3
	case opFdatasync:
		return 1
	}
	return 0
}

// next draws the operation number n given the current file size.
func (g *gen) next(n int, size int64) op {
	total := 0
	for k := range numOpKinds {
		total += g.weight(k)
	}
	pick := g.rng.IntN(total)
	kind := opKind(0)
	for k := range numOpKinds {
		if pick < g.weight(k) {
			kind = k
			break
		}
		pick -= g.weight(k)
	}
	o := op{n: n, kind: kind}
	switch kind {
	case opTruncate:
		o.off = g.offset(size)
	case opRename:
		o.name = g.name(n)
	case opReopen, opFsync, opFdatasync:
	case opMapRead, opMapWrite:
		// Mapped I/O stays inside the current size (a mapping cannot grow
		// the file); the worker turns an empty file's op into a no-op.
		o.off, o.len = g.rangeWithin(size)
	default:
		o.off = g.offset(size)
		o.len = g.length(o.off)
	}
	return o
}

// offset draws a file offset in the region, biased to boundaries and EOF.
func (g *gen) offset(size int64) int64 {
	lo, hi := g.reg.lo, g.reg.hi
	var off int64
	switch g.rng.IntN(5) {
	case 0, 1: // near a chunk-like boundary
		b := boundaries()[g.rng.IntN(3)]
		k := (lo + g.rng.Int64N(hi-lo)) / b
		off = k*b + g.rng.Int64N(129) - 64
	case 2: // near the current end of file
		off = size + g.rng.Int64N(200001) - 100000
	case 3: // the first pages
		off = lo + g.rng.Int64N(8192)
	default:
		off = lo + g.rng.Int64N(hi-lo)
	}
	return min(max(off, lo), hi-1)
}

// length draws a length for a range at off, clipped to the region.
func (g *gen) length(off int64) int64 {
	var n int64
	switch g.rng.IntN(6) {
	case 0:
		n = 1 + g.rng.Int64N(16)
	case 1:
		n = 1 + g.rng.Int64N(4096)
	case 2:
		n = 1 + g.rng.Int64N(70000)
	case 3: // a boundary size, give or take one
		n = boundaries()[g.rng.IntN(3)] + g.rng.Int64N(3) - 1
	case 4:
		n = 1 + g.rng.Int64N(300000)
	default:
		n = 1 + g.rng.Int64N(1300000)
	}
	return max(1, min(n, g.reg.hi-off))
}

// rangeWithin draws a range inside [lo, min(size, hi)).
func (g *gen) rangeWithin(size int64) (int64, int64) {
	end := min(size, g.reg.hi)
	if end <= g.reg.lo {
		return g.reg.lo, 0
	}
	off := g.reg.lo + g.rng.Int64N(end-g.reg.lo)
	n := min(g.length(off), end-off)
	return off, n
}

// name draws a new file name: short ones and long ones (which an
// encrypting filesystem may store differently).
func (g *gen) name(n int) string {
	base := fmt.Sprintf("%s-r%d-", g.prefix, n)
	if g.rng.IntN(3) == 0 {
		return base + strings.Repeat("L", 200)
	}
	return base + "s"
}

// pattern fills b with the data of operation n at file offset off. Bytes
// are never zero (zeros mean holes or truncation) and identify the
// operation that wrote them: byte = 1 + (n*7 + offset) mod 251.
func pattern(b []byte, n int, off int64) {
	// The sequence has period 251: compute one period, then double by copy
	// (cheap under -race, unlike a byte loop over megabytes).
	first := min(len(b), 251)
	for i := range first {
		b[i] = byte(1 + (int64(n)*7+off+int64(i))%251)
	}
	for done := first; done < len(b); done *= 2 {
		copy(b[done:], b[:done])
	}
}
