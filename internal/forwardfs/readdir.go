package forwardfs

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/encryptfs/encryptfs/internal/dircursor"
	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// dirHandle is an open directory: the backing fd and the whole decrypted
// listing, read at opendir, or at the first READDIRPLUS when the kernel
// may cache listings (and again at rewinddir). It answers READDIRPLUS
// lookups itself from the listing's backing names, so a listing costs one
// fstatat per entry and no name encryption.
type dirHandle struct {
	n       *node
	fd      int
	id      []byte
	entries []engine.Entry
	cur     dircursor.Cursor
	mu      sync.Mutex // guards lazy, and fd and id while lazy
	lazy    bool       // not opened and listed yet (OpendirHandle)
}

// OpendirHandle opens and lists a directory; when the kernel may serve
// the listing from its cache, both wait for the first READDIRPLUS.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.r.touch()
	if n.mayCacheListing() {
		return &dirHandle{n: n, fd: -1, lazy: true}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
	}
	n.listingCopy.Store(false) // this open drops the kernel's
	d := &dirHandle{n: n, fd: -1}
	if errno := d.open(); errno != 0 {
		return nil, 0, errno
	}
	if errno := d.load(); errno != 0 {
		engine.CloseFD(d.fd)
		return nil, 0, errno
	}
	return d, 0, 0
}

// open opens the backing directory for the listing.
func (d *dirHandle) open() syscall.Errno {
	pfd, id, release, err := d.n.bdir.openDir()
	if err != nil {
		return d.n.errno(err, "opendir")
	}
	// A listing needs its own fd (getdents keeps a position in it).
	fd, err := engine.OpenDirFD(pfd, ".")
	release()
	if err != nil {
		return d.n.errno(err, "opendir")
	}
	d.fd, d.id = fd, id
	return 0
}

// mayCacheListing says whether the kernel may keep this directory's
// listing in its page cache across opens (FOPEN_CACHE_DIR, KEEP_CACHE):
// then a directory listed again (du or rm -rf after ls -lR) costs OPENDIR
// and RELEASEDIR only, and the backing directory is opened and listed at
// the first READDIRPLUS, so an open served from the cache never does. The
// kernel drops its copy when the directory changes through the mount, or
// when its mtime, checked once the attribute cache has expired, changed
// behind our back. But a cached listing comes without the entries'
// attributes, which READDIRPLUS refreshes, so the kernel may use a copy
// only while those are surely still in its caches: within ListingCache
// (below the entry and attribute timeouts) of the listing, and while no
// file in the directory was opened since (a READ or WRITE makes the
// kernel drop part of the file's attributes: du after md5sum would cost
// a GETATTR per file instead of a READDIRPLUS per 40 or so). Otherwise an
// open without the flags makes the kernel drop its copy, and the next one
// may fill it afresh. While the kernel holds no copy, the flags cost
// nothing: the listing is read now either way.
func (n *node) mayCacheListing() bool {
	d := n.r.opts.ListingCache
	if d <= 0 || n.r.opts.SharedStorage {
		return false
	}
	if !n.listingCopy.Load() {
		return true
	}
	return !n.listingStale.Load() && time.Since(time.Unix(0, n.listedAt.Load())) < d
}

// parentListingStale marks the listing of the directory of n (a file
// being opened) stale (mayCacheListing). A file with several links marks
// one of its directories only; a miss costs GETATTRs, nothing else.
func (n *node) parentListingStale() {
	if _, parent := n.Parent(); parent != nil {
		parent.Operations().(nodeOps).self().listingStale.Store(true)
	}
}

// ensure opens and reads the listing of a handle opened lazily, once;
// fresh says it did so now.
func (d *dirHandle) ensure() (fresh bool, errno syscall.Errno) {
	d.mu.Lock() // FSYNCDIR may come beside a READDIRPLUS
	defer d.mu.Unlock()
	if !d.lazy {
		return false, 0
	}
	if errno := d.open(); errno != 0 {
		return false, errno
	}
	d.lazy = false
	d.n.listingCopy.Store(true) // the kernel caches what this handle lists
	return true, d.load()
}

// load reads the listing (engine.Dir.List, which also decides which
// conflict copies are shown). Entries whose names do not decrypt are
// logged (once per directory and name) and left out of the listing, or,
// with ShowUndecryptable, listed under engine.BadName (unless a good entry
// has that name, or it would be too long). Conflict copies hidden by an
// entry of the same name (engine.IsShadowed) are never listed.
func (d *dirHandle) load() syscall.Errno {
	d.n.listedAt.Store(time.Now().UnixNano())
	d.n.listingStale.Store(false)
	ents, bad, err := d.n.r.ev.DirAt(d.fd, d.id, d.n.bdir.dirPlace()).List()
	if err != nil {
		return d.n.errno(err, "readdir")
	}
	var shown map[string]bool
	for _, b := range bad {
		what := d.n.plainPath() + " (backing name " + b.Backing + ")"
		if d.n.r.logged.first(what) {
			d.n.r.logf("readdir %s: undecryptable entry %q: %v", d.n.plainPath(), b.Backing, b.Err)
		}
		if !d.n.r.opts.ShowUndecryptable || engine.IsShadowed(b.Err) {
			continue
		}
		bn, ok := engine.BadName(b.Backing)
		if shown == nil {
			shown = make(map[string]bool, len(ents))
			for _, e := range ents {
				shown[e.Name.Plain] = true
			}
		}
		if ok && !shown[bn.Plain] {
			ents = append(ents, engine.Entry{Name: bn, Ino: b.Ino, Type: b.Type})
		}
	}
	d.entries = ents
	return 0
}

// Len and Entry make the listing a dircursor.Listing.
func (d *dirHandle) Len() int { return len(d.entries) }

// Entry describes listing entry i. A symlink renamed during this mount
// is listed with the number its node shows (linkino.go).
func (d *dirHandle) Entry(i int) (string, uint32, uint64) {
	e := &d.entries[i]
	ino := e.Ino
	if e.Type == unix.DT_LNK {
		ino = d.n.lnk.linkNumber(e.Name.Plain, ino)
	}
	return e.Name.Plain, dtToMode(e.Type), ino
}

// Readdirent returns the next entry.
func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	d.n.r.touch()
	if _, errno := d.ensure(); errno != 0 {
		return nil, errno
	}
	return d.cur.Next(d.n.StableAttr().Ino, d), 0
}

// Seekdir moves to an offset returned in a previous entry (0: rewind, which
// re-reads the directory).
func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	fresh, errno := d.ensure()
	if errno != 0 {
		return errno
	}
	if d.cur.Seek(off) && !fresh { // a rewind; a fresh listing is new already
		return d.load()
	}
	return 0
}

// Lookup answers the READDIRPLUS lookup of the entry just returned.
func (d *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if _, errno := d.ensure(); errno != 0 {
		return nil, errno
	}
	i := d.cur.Last()
	if i < 0 || i >= len(d.entries) || d.entries[i].Name.Plain != name {
		return d.n.Lookup(ctx, name, out)
	}
	e := entry{pfd: d.fd, pid: d.id, name: d.entries[i].Name}
	st, err := d.n.r.statEntry(e)
	if err != nil {
		return nil, d.n.r.errno(err, "lookup", name)
	}
	return d.n.newEntryChild(ctx, &st, e.name, out), 0
}

// Fsyncdir flushes the backing directory.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	if _, errno := d.ensure(); errno != 0 {
		return errno
	}
	return d.n.errno(d.n.r.ev.SyncFD(d.fd), "fsyncdir")
}

// Releasedir closes the backing fd.
func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	if d.fd >= 0 {
		engine.CloseFD(d.fd)
	}
}

// dtToMode converts a getdents type to the file type bits of a mode.
func dtToMode(t uint8) uint32 {
	switch t {
	case unix.DT_DIR:
		return unix.S_IFDIR
	case unix.DT_LNK:
		return unix.S_IFLNK
	case unix.DT_FIFO:
		return unix.S_IFIFO
	case unix.DT_SOCK:
		return unix.S_IFSOCK
	case unix.DT_CHR:
		return unix.S_IFCHR
	case unix.DT_BLK:
		return unix.S_IFBLK
	}
	return unix.S_IFREG
}

var (
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.FileReaddirenter   = (*dirHandle)(nil)
	_ fs.FileLookuper       = (*dirHandle)(nil)
	_ fs.FileSeekdirer      = (*dirHandle)(nil)
	_ fs.FileFsyncdirer     = (*dirHandle)(nil)
	_ fs.FileReleasedirer   = (*dirHandle)(nil)
)
