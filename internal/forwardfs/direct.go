package forwardfs

import (
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
// would go stale under its writes, which Linux 6.1 neither updates nor
// drops for a direct write. So:
//
//   - a handle opened O_WRONLY goes direct only if it is the file's only
//     open handle (an mmap holds its handle open, so a mapped file never
//     gets a direct writer), and it opens without FOPEN_KEEP_CACHE, so
//     that the kernel drops whatever earlier, closed handles left cached;
//   - every other handle is cached, as before, also one opened while a
//     direct writer is open; a direct WRITE on a file that has another
//     handle open then has the range it wrote invalidated in the kernel's
//     cache (NOTIFY_INVAL_INODE), so that a reader following a log that
//     another process appends to through O_WRONLY|O_APPEND, or a shared
//     mapping, sees the new bytes.
//
// The invalidation is sent just after the WRITE is answered, not before:
// sent from the WRITE's own handler on the classic transport it never
// returned and the mount hung (TestDirectWritersStayCoherent; io_uring
// did not; which lock the kernel waited on was not found). So for a moment after
// write(2) returns, a reader beside the writer on a kernel that does not
// drop the range itself (Linux 6.1) may still be served the old bytes from
// its cache; once the invalidation lands, every read is fresh. (Linux 6.18
// drops the range itself.) A handle that writes through the cache beside
// a direct writer shares the race of docs/performance.md, "Page cache
// coherence": an invalidation between its cache update and its WRITE.
//
// Handles beside a direct writer are not made direct themselves: the
// kernel sends RELEASE after close(2) has returned, so "a direct writer is
// open" stays true for a moment after the writer closed, and a program
// that writes a file, closes it and maps it at once would be refused the
// shared mapping (ENODEV) now and then.
type directWriters struct {
	// notify invalidates [off, off+size) of the node's cached pages
	// (its NotifyContent; set by NewRoot).
	notify func(n *node, off, size int64) error
}

// direct reports whether a new handle of of, opened with flags, goes
// direct. The caller holds its reference to of already, so that a handle
// opened at the same time is counted in Sole by one or the other.
func (d *directWriters) direct(of *openFile, flags uint32) bool {
	return goesDirect(flags, of.Sole)
}

// goesDirect is direct's rule, with the file's "only open handle" test
// given (asked only for a write-only open).
func goesDirect(flags uint32, sole func() bool) bool {
	return flags&unix.O_ACCMODE == unix.O_WRONLY && sole()
}

// wrote has what a direct handle of of just wrote at [off, off+size)
// invalidated in the kernel's cache of n, if another handle of the file is
// open (one that may have cached those pages), on a goroutine of its own,
// so that the WRITE is answered first (see above).
func (d *directWriters) wrote(n *node, of *openFile, off, size int64) {
	if !needsInvalidation(size, of.Sole) {
		return
	}
	go func() {
		if err := d.notify(n, off, size); err != nil && n.r.logged.first("notify") {
			n.r.logf("encryptfs: cannot drop a directly written range from the kernel's page cache (%v); a reader beside a write-only handle may read stale bytes on kernels older than 6.18", err)
		}
	}()
}

// needsInvalidation is wrote's rule, with the file's "only open handle"
// test given: something was written and another handle is open.
func needsInvalidation(size int64, sole func() bool) bool {
	return size > 0 && !sole()
}

// openFlags returns the FUSE open flags of a new handle h, opened with
// flags, whose cache flags would otherwise be cacheFlags (keepCache, or
// openFuseFlags for a new file), and marks h direct if it goes direct.
func (r *Root) openFlags(h *handle, flags, cacheFlags uint32) uint32 {
	out := r.noFlush(flags)
	if !r.directWriters.direct(h.of, flags) {
		return out | cacheFlags
	}
	h.direct = true
	return out | fuse.FOPEN_DIRECT_IO
}
