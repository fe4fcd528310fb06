package forwardfs

import (
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Write-only handles bypass the kernel's page cache (FOPEN_DIRECT_IO).
//
// Without it, the kernel copies every write(2) into the file's page cache
// and then sends it to us: a second copy of every byte written, page cache
// filled with data the writer cannot read back, and, before the first
// write of every new file, a GETXATTR security.capability round trip
// (file_remove_privs; the direct path leaves killing privileges to us,
// which killPriv does on every WRITE). Measured (bench/ddab.sh and
// bench/smallfiles.sh, 5 rounds, classic): dd of 512 MiB 1.18x faster,
// untar of 2,800 files 0.86x the time, create+write+close 4 requests
// instead of 5. docs/performance.md, "Write-only handles", has the figures.
//
// Nothing is lost by not caching what a write-only handle writes: it
// cannot read, and it cannot be mmapped. But another handle's cached pages
// would go stale under its writes, which the kernel does not update or
// drop for a direct write. So:
//
//   - a handle opened O_WRONLY goes direct only if it is the file's only
//     open handle (an mmap holds its handle open, so a mapped file is never
//     alone), and it opens without FOPEN_KEEP_CACHE, so that the kernel
//     drops whatever earlier, closed handles left cached;
//   - while a direct handle that may write is open, every other handle
//     opened on the file goes direct too, whatever its mode, so that nothing
//     is cached while a writer bypasses the cache (a reader following a log
//     that another process appends to through O_WRONLY|O_APPEND sees every
//     byte). The cost: such a handle cannot be mapped MAP_SHARED (the kernel
//     answers ENODEV), and its reads are not cached.
//
// Once the last direct writer is released, new opens are cached again:
// nothing was cached meanwhile, and the written-through rule (keepCache)
// drops what is left when the file is next opened alone.
type directWriters struct {
	mu sync.Mutex
	// open counts, per file, its open direct handles that may write.
	// An entry goes when its count reaches 0, so the map holds at most
	// one entry per open file.
	open map[*openFile]int
}

// direct reports whether a new handle of of, opened with flags, goes
// direct, and counts it if so and it may write. The caller holds its
// reference to of already, so that two opens racing see each other: the
// one that decides second either counts the first's reference (not alone)
// or finds its direct writer counted.
func (d *directWriters) direct(of *openFile, flags uint32) bool {
	return d.decide(of, of.Sole, flags)
}

// decide is direct with the file's "only open handle" test given (sole is
// called under d.mu).
func (d *directWriters) decide(of *openFile, sole func() bool, flags uint32) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.open[of]
	if n == 0 && !(flags&unix.O_ACCMODE == unix.O_WRONLY && sole()) {
		return false
	}
	if flags&unix.O_ACCMODE != unix.O_RDONLY {
		if d.open == nil {
			d.open = map[*openFile]int{}
		}
		d.open[of] = n + 1
	}
	return true
}

// release forgets a direct handle that may write, at its RELEASE.
func (d *directWriters) release(of *openFile) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.open[of] <= 1 {
		delete(d.open, of)
		return
	}
	d.open[of]--
}

// openFlags returns the FUSE open flags of a new handle h, opened with
// flags, whose cache flags would otherwise be cacheFlags (keepCache, or
// openFuseFlags for a new file), and marks h direct if it goes direct.
func (r *Root) openFlags(h *handle, flags, cacheFlags uint32) uint32 {
	out := r.noFlush(flags)
	if !r.directWriters.direct(h.of, flags) {
		return out | cacheFlags
	}
	h.directWriter = flags&unix.O_ACCMODE != unix.O_RDONLY
	return out | fuse.FOPEN_DIRECT_IO
}
