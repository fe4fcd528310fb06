package fileengine

import "sync"

// edgeCache keeps the last few sealed chunks of a ReverseFile that a read
// used only in part. Kernel reads (128 KiB readahead, up to 1 MiB) do not
// align with stored chunks (ChunkSize + overhead bytes), so the chunk at the
// end of one read is needed again at the start of the next; sealing it once
// saves up to a third of the work for sequential reads.
type edgeCache struct {
	mu      sync.Mutex
	next    int
	entries [4]struct {
		valid bool
		index uint64
		data  []byte
	}
}

// get appends cached chunk i to dst and reports whether it was there.
func (c *edgeCache) get(i uint64, dst []byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.valid && e.index == i {
			return append(dst, e.data...), true
		}
	}
	return nil, false
}

// put remembers a copy of sealed chunk i, evicting the oldest entry.
func (c *edgeCache) put(i uint64, sealed []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &c.entries[c.next]
	c.next = (c.next + 1) % len(c.entries)
	e.valid, e.index, e.data = true, i, append(e.data[:0], sealed...)
}
