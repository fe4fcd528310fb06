// Package fsx is a differential random-operations test in the style of
// fsx: a seeded stream of writes, reads, truncates, fallocates, hole
// punches, mmap I/O, renames, reopens and syncs is applied to a file in the
// directory under test and to a file in a reference directory (a plain
// filesystem), and the two are compared after every step. A divergence
// fails with the seed, the operation number and the log of the operations
// that led to it, so that any failure can be replayed exactly.
//
// Offsets and lengths favour the places where an encrypting filesystem does
// read-modify-write: around 4 KiB, 64 KiB and 1 MiB boundaries, the current
// end of file, and far past it (holes).
package fsx

import (
	"testing"
)

// DefaultOps is an operation count that runs in a few seconds on tmpfs.
const DefaultOps = 3000

// DefaultProcs is the number of processes RunMultiProcess callers use by default.
const DefaultProcs = 4

// Options exempts a filesystem from operations it does not support. The
// zero value runs everything; an unsupported operation without its
// exemption fails the test (it is never skipped silently).
type Options struct {
	NoFallocate bool  // no fallocate(2) at all (implies the two below)
	NoKeepSize  bool  // no FALLOC_FL_KEEP_SIZE preallocation
	NoPunchHole bool  // no FALLOC_FL_PUNCH_HOLE
	NoMmap      bool  // no shared mmap reads and writes (e.g. FUSE direct_io)
	MaxSize     int64 // largest file offset the test writes; 0 means 4 MiB + 3
	FullCheck   int   // compare whole files every FullCheck ops; 0 means 50
}

// withDefaults fills in zero fields.
func (o Options) withDefaults() Options {
	if o.MaxSize == 0 {
		o.MaxSize = 4<<20 + 3
	}
	if o.FullCheck == 0 {
		o.FullCheck = 50
	}
	if o.NoFallocate {
		o.NoKeepSize, o.NoPunchHole = true, true
	}
	return o
}

// Run applies ops seeded random operations to a file in testDir and to one
// in refDir, comparing size and contents after every step.
func Run(t *testing.T, testDir, refDir string, seed int64, ops int) {
	t.Helper()
	RunWithOptions(t, testDir, refDir, seed, ops, Options{})
}

// RunWithOptions is Run with exemptions.
func RunWithOptions(t *testing.T, testDir, refDir string, seed int64, ops int, opts Options) {
	t.Helper()
	opts = opts.withDefaults()
	p, err := createPair(testDir, refDir, "fsx-"+itoa(seed), 0)
	if err != nil {
		t.Fatalf("fsx seed %d: %v", seed, err)
	}
	t.Cleanup(func() { p.remove(t) })
	w := newWorker(p, seed, opts, region{lo: 0, hi: opts.MaxSize, resize: true})
	runErr := w.run(ops)
	if cerr := p.close(); runErr == nil && cerr != nil {
		runErr = cerr
	}
	if runErr == nil {
		runErr = compareFiles(p.path(0), p.path(1))
	}
	if runErr != nil {
		t.Fatalf("fsx seed %d (%d ops): %v\nreplay with the same seed and op count\n%s", seed, ops, runErr, w.log.tail(60))
	}
	t.Logf("fsx seed %d: %d ops, final size %d, %s", seed, ops, w.lastSize, w.counts())
}
