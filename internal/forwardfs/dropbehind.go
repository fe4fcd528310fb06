package forwardfs

import (
	"os"
	"sync"
)

// Drop-behind: a write-only handle that is its file's only handle and
// writes a long sequential run has the kernel drop the page cache behind
// it (NOTIFY_INVAL_INODE for the range), as `dd oflag=nocache` does from
// the writer's side.
//
// Why: without the writeback cache every write(2) is first copied into
// the FUSE page cache, so a 1000 MiB dd left 1000 MiB of pages that no
// one reads: the next sole open of a written file drops them anyway
// (keepCache). Dropped behind the writer, the same few MiB are reused.
// On a VM whose host takes freed memory back (free page reporting, as
// here), where a page new to the guest costs a host fault at first touch,
// that made the dd write 1.14-1.41x faster; given memory the guest had
// just touched it ran 0.94-0.97x, and the rest of the page cache is no
// longer pushed out by such a file (docs/performance.md, "Drop-behind").
//
// Why it is safe: the page cache goes stale only when pages are dropped
// while a write into them has not reached the daemon yet and someone
// reads them in between (docs/performance.md, "Page cache coherence").
// Here the range lies wholly below the handle's current write, every write
// of the run into it has been answered, the handle cannot read, and no
// other handle is open (File.Sole), so no one else can write or read
// there; an open that races with the check is the same narrow window as
// the open that drops a written file's cache (keepCache). The
// notification goes from a goroutine of its own holding no lock, never
// from the WRITE's handler: the kernel may wait there for a locked page
// whose READ needs a daemon thread, and on io_uring the handler runs on
// the ring's only thread (libfuse gives the same rule for its notify
// calls).
const (
	// dropBehindStep is how far a run must have gone past the last drop
	// before the next: one notification per 8 MiB written.
	dropBehindStep = 8 << 20
)

// dropBehind is the drop-behind state of one write-only handle.
type dropBehind struct {
	// page is the page size: the kernel drops whole pages, and one that
	// held the start of the current write must stay.
	page int64

	mu sync.Mutex
	// next is where the handle's sequential run continues: the end of its
	// last write. A write elsewhere starts a new run.
	next int64
	// from is the first byte of the run not dropped yet (page aligned).
	from int64
	// busy is set while a notification is in flight: one at a time.
	busy bool
}

// wrote records that the handle wrote [off, off+n) and returns the range
// to drop now, if any (n == 0: none). The range is whole pages below off:
// the page of the current write stays, as do pages a write not yet answered
// may still fill.
func (d *dropBehind) wrote(off, n int64, sole func() bool) (from, length int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	mask := ^(d.page - 1)
	if off != d.next {
		d.from = off & mask
	}
	d.next = off + n
	to := off & mask
	if d.busy || to-d.from < dropBehindStep || !sole() {
		return 0, 0
	}
	from = d.from
	d.from, d.busy = to, true
	return from, to - from
}

// newDropBehind returns the drop-behind state of a new write-only handle.
func newDropBehind() *dropBehind { return &dropBehind{page: int64(os.Getpagesize())} }

// done ends the notification in flight.
func (d *dropBehind) done() {
	d.mu.Lock()
	d.busy = false
	d.mu.Unlock()
}

// dropBehindAfter runs drop-behind for handle h after its write of n bytes
// at off has been stored.
func (h *handle) dropBehindAfter(off, n int64) {
	if h.drop == nil {
		return
	}
	from, length := h.drop.wrote(off, n, h.of.Sole)
	if length == 0 {
		return
	}
	r := h.n.r
	r.notifies.Add(1)
	go func() {
		defer r.notifies.Done()
		defer h.drop.done()
		// An error (an old kernel without the notification, the mount
		// gone) only leaves the pages cached, as without drop-behind.
		h.n.NotifyContent(from, length)
	}()
}
