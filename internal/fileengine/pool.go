package fileengine

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Buffer size classes are powers of two from minClassShift to maxClassShift.
// Requests above the largest class are allocated and left to the GC.
const (
	minClassShift = 10 // 1 KiB
	maxClassShift = 25 // 32 MiB
	numClasses    = maxClassShift - minClassShift + 1
)

// bufPools recycles byte buffers per power-of-two size class, so that the
// steady state of a busy mount allocates (almost) nothing per request.
// Buffers are stored as *[]byte so that Put itself does not allocate.
type bufPools struct {
	classes [numClasses]sync.Pool
}

// classOf returns the size class that holds n bytes, or -1 if n is too big.
func classOf(n int) int {
	if n <= 1<<minClassShift {
		return 0
	}
	shift := bits.Len(uint(n - 1))
	if shift > maxClassShift {
		return -1
	}
	return shift - minClassShift
}

// get returns a buffer of length n. Its contents are arbitrary.
func (bp *bufPools) get(n int) *[]byte {
	c := classOf(n)
	if c < 0 {
		b := make([]byte, n)
		return &b
	}
	if v := bp.classes[c].Get(); v != nil {
		b := v.(*[]byte)
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(c+minClassShift))
	return &b
}

// put recycles a buffer obtained from get. nil is ignored.
func (bp *bufPools) put(b *[]byte) {
	if b == nil {
		return
	}
	c := classOf(cap(*b))
	if c < 0 || cap(*b) != 1<<(c+minClassShift) {
		return // oversized or foreign buffer: let the GC have it
	}
	bp.classes[c].Put(b)
}

// chunkWork is a batch of per-chunk crypto split into ranges [lo, hi) of
// chunk positions. work must be safe to call concurrently on disjoint ranges.
type chunkWork interface {
	work(lo, hi int) error
}

// shardSet is the shared state of one parallel batch. It is not pooled: a
// helper that starts after all work was claimed still reads the counter.
type shardSet struct {
	w        chunkWork
	n        int          // chunk positions in the batch
	step     int          // positions claimed at a time
	next     atomic.Int64 // first unclaimed position
	done     atomic.Int64 // positions finished
	finished chan struct{}
	mu       sync.Mutex // guards errLo and err
	errLo    int        // start of the lowest failed claim
	err      error
}

// forChunks runs w over n chunk positions. Small batches, or an engine with
// the bulk path disabled, run on the caller's goroutine. Larger ones are
// worked on by the caller and helper goroutines that claim small runs of
// positions from a shared counter, so a helper that the scheduler starts
// late simply takes fewer, and the caller waits only for runs that were
// claimed, never for a helper to wake up. Helpers are taken from the
// engine-wide semaphore without blocking, so the number of crypto goroutines
// stays bounded and a busy engine degrades to sequential work instead of
// queueing. The returned error is the one of the lowest failing run, so
// callers see the first bad chunk.
func (e *Engine) forChunks(n int, w chunkWork) error {
	if n <= 0 {
		return nil
	}
	if !e.parallel || n < e.minChunks || e.maxWorkers <= 1 {
		return w.work(0, n)
	}
	want := min(e.maxWorkers, n) - 1 // helpers besides the caller
	helpers := 0
acquire:
	for helpers < want {
		select {
		case e.helpers <- struct{}{}:
			helpers++
		default:
			break acquire
		}
	}
	if helpers == 0 {
		return w.work(0, n)
	}
	set := &shardSet{w: w, n: n, errLo: n, finished: make(chan struct{})}
	set.step = max(1, n/(4*(helpers+1)))
	for range helpers {
		go e.runHelper(set)
	}
	set.claim()
	<-set.finished
	set.mu.Lock()
	defer set.mu.Unlock()
	return set.err
}

// claim works on runs of positions until none are left to claim. Whoever
// finishes the last position closes finished.
func (s *shardSet) claim() {
	for {
		lo := int(s.next.Add(int64(s.step))) - s.step
		if lo >= s.n {
			return
		}
		hi := min(lo+s.step, s.n)
		if err := s.w.work(lo, hi); err != nil {
			s.mu.Lock()
			if lo < s.errLo {
				s.errLo, s.err = lo, err
			}
			s.mu.Unlock()
		}
		if int(s.done.Add(int64(hi-lo))) == s.n {
			close(s.finished)
		}
	}
}

// runHelper is one helper goroutine of forChunks.
func (e *Engine) runHelper(set *shardSet) {
	set.claim()
	<-e.helpers
}
