package forwardfs

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// openFile is the mount's reference to an open backing inode: the
// vault engine's one file of the inode (engine.File), shared with every
// handle, every hard link and every other door until the last reference
// is released, so an open-but-unlinked file keeps working and the
// engine's size and tail caches are never duplicated.
type openFile = engine.File

// openFiles is the mount's side of the engine's open-file table: which
// inodes were written through (the page-cache rule, keepCache).
type openFiles struct {
	ev *engine.Vault
	// written holds the inodes written through since their last open
	// (see keepCache); bounded by maxWritten. Guarded by writtenMu, which
	// is taken inside the table's lock when the last handle goes, so the
	// next open of the inode sees the entry.
	writtenMu sync.Mutex
	written   map[uint64]struct{}
}

// maxWritten bounds openFiles.written (about 40 bytes an entry). Forgetting
// entries costs only speed: their next open keeps the page cache.
const maxWritten = 1 << 16

// init serves the mount from the engine's table.
func (t *openFiles) init(ev *engine.Vault) {
	t.ev = ev
	t.written = map[uint64]struct{}{}
	ev.OnLastRelease(t.lastReleased)
}

// lastReleased remembers an inode written through as its last handle goes.
func (t *openFiles) lastReleased(of *openFile) {
	if !of.Wrote.Load() {
		return
	}
	t.writtenMu.Lock()
	defer t.writtenMu.Unlock()
	if len(t.written) >= maxWritten {
		clear(t.written)
	}
	t.written[of.Key().Ino] = struct{}{}
}

// takeWritten reports whether the inode was written through since its
// last open and forgets it.
func (t *openFiles) takeWritten(ino uint64) bool {
	t.writtenMu.Lock()
	defer t.writtenMu.Unlock()
	_, written := t.written[ino]
	delete(t.written, ino)
	return written
}

// get returns the open file of the backing inode st with a new reference,
// or nil.
func (t *openFiles) get(st *unix.Stat_t) *openFile {
	of, _ := t.ev.Lookup(engine.FileKey{Dev: uint64(st.Dev), Ino: st.Ino})
	return of
}

// forNode returns the open file of a regular-file node, or nil.
//
// The inode number alone does not identify the file: once a file is
// unlinked and closed, the backing filesystem may give its number to a new
// file while the kernel still holds the old node (a path walk that raced
// with a rename over it). Such a stale node must not be served the new
// file's contents or size, so an open file serves only the node it was
// opened through (bind).
func (t *openFiles) forNode(n *node) *openFile {
	if n.StableAttr().Mode != unix.S_IFREG {
		return nil
	}
	of, _ := t.ev.LookupOwned(engine.FileKey{Dev: n.fileDev.Load(), Ino: n.StableAttr().Ino}, n)
	return of
}

// bind makes of serve node n (see forNode), and records its device in n
// (the table's key is device and inode; a node knows only the inode
// number). Two live nodes for one backing inode are rare (go-fuse keeps
// one node per inode number); if it happens, the later open wins and the
// other node reopens by name, which shares the engine's file again.
func (t *openFiles) bind(of *openFile, n *node) {
	n.fileDev.Store(of.Key().Dev)
	of.Bind(n)
}

// put drops a reference and closes the file after the last one.
func (t *openFiles) put(of *openFile) error { return of.Release() }

// closeAll closes every open file (at unmount, see Root.Close).
func (t *openFiles) closeAll() { t.ev.CloseFiles() }

// count returns the number of open backing inodes.
func (t *openFiles) count() int { return t.ev.OpenFiles() }

// acquire returns the open file of regular-file node n, opening it if
// needed through the engine's place-checked open (engine.Dir.Open), which
// shares an inode open already, opens read-write where it can (the
// engine reads partial chunks back before rewriting them) and read-only
// otherwise, with O_NOATIME, and handles the race with a rename.
//
// A node's name is resolved again for each open (after the kernel's
// lookup), so a rename racing with the open can put another object under
// the name. The object the kernel looked up is then gone from the
// directory, and the open fails with ENOENT (Want: the node's inode), as
// open does for a name removed during the call; opening the newcomer
// instead would hand one kernel inode another file's contents. (ESTALE
// would make the kernel walk the path again, but a second race in a row
// then leaks ESTALE, which callers such as go-fuse's posixtest do not
// expect from a local file system.)
func (n *node) acquire() (*openFile, error) {
	if of := n.r.files.forNode(n); of != nil {
		return of, nil
	}
	e, err := n.entry()
	if err != nil {
		return nil, err
	}
	defer e.close()
	want := engine.FileKey{Ino: n.StableAttr().Ino}
	of, err := n.r.entryDir(e).Open(e.name, engine.OpenOptions{Want: want, NoAtime: true})
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EISDIR) || engine.IsNotRegular(err) {
		// A symlink, directory or special file took the name over.
		return nil, syscall.ENOENT
	}
	if err != nil {
		return nil, err
	}
	n.r.files.bind(of, n)
	return of, nil
}

// entryDir is the engine's handle of e's parent directory, over the fd e
// holds (which stays e's).
func (r *Root) entryDir(e entry) *engine.Dir { return r.ev.DirAt(e.pfd, e.pid, nil) }

// handle is one FUSE file handle.
type handle struct {
	n      *node
	of     *openFile
	append bool
	// drop is the drop-behind state of a write-only handle, nil for any
	// other (dropbehind.go).
	drop *dropBehind
}

// newHandle returns a handle of node n on of, opened with open(2) flags.
func newHandle(n *node, of *openFile, flags uint32) *handle {
	h := &handle{n: n, of: of, append: flags&unix.O_APPEND != 0}
	if flags&unix.O_ACCMODE == unix.O_WRONLY {
		h.drop = newDropBehind()
	}
	return h
}

// openFlags are the open(2) flags the handle itself keeps; everything else
// (access mode, O_APPEND, O_TRUNC...) is handled here, not by the backing fd.
func (r *Root) openFuseFlags() uint32 {
	if r.opts.SharedStorage {
		return 0
	}
	// We are the only writer of CIPHERDIR: the page cache stays valid
	// across opens.
	return fuse.FOPEN_KEEP_CACHE
}

// keepCache returns the open flags for a new handle of of: FOPEN_KEEP_CACHE
// (see openFuseFlags) unless the file was written through since it was last
// opened and this handle is its only one. After writes that do not cover
// whole pages (tar writes 10 KiB records, then sets mode and times),
// reading the file back from a kept cache takes several READs, one per gap
// of pages that are not up to date (measured: 1.64 READs a file for md5sum
// after tar x, against 1.02 when the open drops the cache; see
// TestReadRequestsAfterWrites).
//
// Dropping the cache is safe only while nobody writes the file. The
// kernel's FUSE write path marks a fully written page up to date and
// unlocks it before its WRITE reaches us; an invalidation in that window
// followed by a read of the page (readahead of another reader) caches the
// bytes from before the write for good (TestConcurrentWritesStayCoherent).
// So the cache is dropped only when no other handle of the file is open:
// every write needs an open handle, and the kernel sends RELEASE only
// after the last one through it has returned. (The mount also turns off
// the kernel's own invalidation on a changed mtime, which races the same
// way: mount.serverConfig.explicitInval.)
func (r *Root) keepCache(of *openFile) uint32 {
	flags := r.openFuseFlags()
	if flags&fuse.FOPEN_KEEP_CACHE == 0 {
		return flags
	}
	if of.Sole() && (r.files.takeWritten(of.Key().Ino) || of.Wrote.Load()) {
		flags &^= fuse.FOPEN_KEEP_CACHE
	}
	return flags
}

// Open opens a regular file. An alias opens for reading only (readOnly).
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.r.touch()
	if flags&unix.O_ACCMODE != unix.O_RDONLY || flags&unix.O_TRUNC != 0 {
		if err := n.readOnly(); err != nil {
			return nil, 0, n.errno(err, "open")
		}
	}
	of, err := n.acquire()
	if err != nil {
		return nil, 0, n.errno(err, "open")
	}
	n.parentListingStale()
	if n.r.opts.SharedStorage {
		// Close-to-open with another writer of CIPHERDIR: this mount's
		// File of the inode may be older than what the other side
		// closed (docs/shared-storage.md).
		if err := of.Reload(); err != nil {
			n.r.files.put(of)
			return nil, 0, n.errno(err, "open")
		}
	}
	if flags&unix.O_TRUNC != 0 {
		if err := of.Truncate(0); err != nil {
			n.r.files.put(of)
			return nil, 0, n.errno(err, "truncate")
		}
	}
	return newHandle(n, of, flags), n.r.keepCache(of) | n.r.noFlush(flags), 0
}

// noFlush is FOPEN_NOFLUSH for every handle on a vault whose FLUSH does
// something (file roots: see Flush). A handle that wrote is settled at
// RELEASE instead (Release), before its file leaves the open-file table,
// so that a stat (Getattr settles an open file) or a utimensat (Setattr
// settles it before it sets times) never sees the header write move the
// mtime after either: what FLUSH was for, without its round trip per
// close (issue 22: create+write+close 6 requests on such a vault, now 5,
// as on format 1). A vault without roots answers FLUSH with ENOSYS once
// instead (Flush).
//
// Not with --shared-storage: there another machine opens the file right
// after close(2) returns (close-to-open, docs/shared-storage.md), and must
// find its clean header written, so a handle that may have written keeps
// its FLUSH (Flush settles it); a read-only one owes nothing.
func (r *Root) noFlush(flags uint32) uint32 {
	if !r.ev.Roots() {
		return 0
	}
	if r.opts.SharedStorage && (flags&unix.O_ACCMODE != unix.O_RDONLY || flags&unix.O_TRUNC != 0) {
		return 0
	}
	return fuse.FOPEN_NOFLUSH
}

// Read reads plaintext.
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.n.r.touch()
	k, err := h.of.ReadAt(dest, off)
	if err != nil && err != io.EOF {
		return nil, h.n.errno(err, "read")
	}
	return fuse.ReadResultData(dest[:k]), 0
}

// Write writes plaintext; O_APPEND handles write at the current end.
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.n.r.touch()
	h.killPriv(ctx)
	if h.append {
		h.of.AppendMu.Lock()
		defer h.of.AppendMu.Unlock()
		size, err := h.of.Size()
		if err != nil {
			return 0, h.n.errno(err, "write")
		}
		off = size
	}
	if !h.of.Wrote.Load() {
		h.of.Wrote.Store(true)
	}
	k, err := h.of.WriteAt(data, off)
	if err != nil {
		return uint32(k), h.n.errno(err, "write")
	}
	h.dropBehindAfter(off, int64(k))
	return uint32(k), 0
}

// killPriv clears set-user-ID and set-group-ID (with group execute) on a
// write by anyone but root, as a local filesystem does. The kernel leaves
// this to us because the mount asks for FUSE_HANDLE_KILLPRIV_V2, which saves
// a getxattr("security.capability") round trip per write.
func (h *handle) killPriv(ctx context.Context) {
	mode := h.of.Mode.Load()
	priv := mode & unix.S_ISUID
	if mode&unix.S_IXGRP != 0 {
		priv |= mode & unix.S_ISGID
	}
	if priv == 0 {
		return
	}
	if c, ok := fuse.FromContext(ctx); ok && c.Uid == 0 {
		return
	}
	if err := unix.Fchmod(h.of.Fd(), (mode&^priv)&0o7777); err == nil {
		h.of.Mode.Store(mode &^ priv)
	}
}

// Flush, on a vault without file roots, answers ENOSYS, so the kernel
// stops sending FLUSH on every close (one request less per close): writes
// go straight to the backing file, so there is no error to report at close
// time, and POSIX locks are handled by the kernel.
//
// With file roots (docs/format.md §16) a handle is opened with
// FOPEN_NOFLUSH (noFlush), so the kernel sends no FLUSH, and the file is
// settled at RELEASE (Release); with --shared-storage a handle that may
// write is not, and its FLUSH settles the file before close(2) returns.
//
// The answer depends on the vault, never on the file: ENOSYS stops FLUSH
// for every file of the mount, so it must not be given for the one file
// of a vault with roots that has no header yet (an empty file; that once
// turned FLUSH off for the whole mount at the first close of an empty
// file).
func (h *handle) Flush(ctx context.Context) syscall.Errno {
	if !h.n.r.ev.Roots() {
		return syscall.ENOSYS
	}
	if err := h.of.Settle(); err != nil {
		return h.n.errno(err, "flush")
	}
	return 0
}

// Fsync flushes the backing file.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return h.n.errno(h.of.Sync(), "fsync")
}

// Release drops the handle's reference to the shared file. It
// settles a file with roots (engine.File.Settle: the clean header,
// the space reserved ahead given back) before the handle leaves the
// open-file table: until then a stat or a utimensat finds the file open
// and settles it first, so none sees the mtime move after it (noFlush).
// A failed settle leaves the file DIRTY (readable by v1's rules, fsck
// reports it) and is logged: RELEASE has no caller to tell.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	// The vault's answer, not the file's (File.Roots reads state a
	// concurrent rebind of the file may be writing).
	if h.n.r.ev.Roots() {
		if err := h.of.Settle(); err != nil {
			h.n.errno(err, "release")
		}
	}
	return h.n.errno(h.n.r.files.put(h.of), "close")
}

// Allocate supports mode 0 (grow, sparse), FALLOC_FL_KEEP_SIZE (reserve
// the backing space of the range's chunks, size unchanged) and
// FALLOC_FL_PUNCH_HOLE|KEEP_SIZE. A range that ends beyond the largest
// file is EFBIG; the kernel checks this too, but the sum must not wrap
// here whoever sends the request.
func (h *handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	h.n.r.touch()
	f := h.of
	maxSize := uint64(h.n.r.ev.MaxPlainSize())
	if mode&unix.FALLOC_FL_PUNCH_HOLE == 0 && (off > maxSize || size > maxSize-off) {
		return syscall.EFBIG
	}
	end := int64(off + size)
	var err error
	switch mode {
	case 0:
		var cur int64
		if cur, err = f.Size(); err == nil && end > cur {
			err = f.Truncate(end)
		}
	case unix.FALLOC_FL_KEEP_SIZE:
		// The backing bytes of the chunks [off, end) touch: a later
		// write there then cannot fail for lack of space (where the
		// backing file system overwrites in place).
		err = f.ReserveSpace(int64(off), end)
	case unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE:
		err = f.PunchHole(int64(off), int64(size))
	default:
		return syscall.EOPNOTSUPP
	}
	return h.n.errno(err, "fallocate")
}

// Getattr on a handle stats the backing fd (works after unlink).
func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.n.Getattr(ctx, h, out)
}

var (
	_ fs.FileReader    = (*handle)(nil)
	_ fs.FileWriter    = (*handle)(nil)
	_ fs.FileFlusher   = (*handle)(nil)
	_ fs.FileFsyncer   = (*handle)(nil)
	_ fs.FileReleaser  = (*handle)(nil)
	_ fs.FileAllocater = (*handle)(nil)
	_ fs.NodeOpener    = (*node)(nil)
)
