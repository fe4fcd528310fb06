package core

import (
	"math/bits"
	"sync"
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

// shardSet carries the results of one parallel batch; pooled per engine.
type shardSet struct {
	wg   sync.WaitGroup
	errs []error
}

// forChunks runs w over n chunk positions. Small batches, or an engine with
// the bulk path disabled, run on the caller's goroutine. Larger ones are
// split into contiguous ranges, one per worker; helpers are taken from the
// engine-wide semaphore without blocking, so the total number of crypto
// goroutines stays bounded and a busy engine degrades to sequential work
// instead of queueing. The returned error is the one of the lowest range
// that failed, so callers see the first bad chunk.
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
	shards := helpers + 1
	set := e.shards.Get().(*shardSet)
	if cap(set.errs) < shards {
		set.errs = make([]error, shards)
	}
	set.errs = set.errs[:shards]
	clear(set.errs)
	set.wg.Add(helpers)
	for k := 1; k < shards; k++ {
		go e.runShard(w, set, k, k*n/shards, (k+1)*n/shards)
	}
	set.errs[0] = w.work(0, n/shards)
	set.wg.Wait()
	var err error
	for _, shardErr := range set.errs {
		if shardErr != nil {
			err = shardErr
			break
		}
	}
	clear(set.errs)
	e.shards.Put(set)
	return err
}

// runShard is one helper goroutine of forChunks.
func (e *Engine) runShard(w chunkWork, set *shardSet, k, lo, hi int) {
	set.errs[k] = w.work(lo, hi)
	<-e.helpers
	set.wg.Done()
}
