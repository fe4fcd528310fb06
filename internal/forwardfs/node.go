package forwardfs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/fuseserver"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is every kind of file: directories, regular files, symlinks, fifos,
// devices and sockets. It stores nothing but the directory ID (directories
// only, read once): names are taken from the go-fuse tree.
type node struct {
	fs.Inode
	r *Root

	mu        sync.Mutex
	dirID     []byte // directories: the ID, nil until first needed
	fd        int    // directories: cached backing fd, -1 if none
	fdUsers   int    // operations using fd right now
	forgotten bool   // the kernel forgot the node: close fd when unused

	// alias: the node was found as a sync-conflict copy or an undecryptable
	// entry, whose backing name is not the encryption of its name (see
	// existing).
	alias atomic.Bool

	// Regular files: the backing device of the file bound to the node
	// (openFiles.bind), which with the node's inode number keys it in
	// the engine's open-file table.
	fileDev atomic.Uint64
	// nlink is the link count of the node's backing object as last found
	// by the lookup, listing or create that made the node (newChild), or
	// by a link of ours to it (Link); 0 if unknown. It only goes up
	// through Link, so without others changing CIPHERDIR a 1 here is the
	// file's only name (Unlink: no stat of it); a count that went down
	// since costs that stat only.
	nlink atomic.Uint32

	// Symlinks: the backing inode number, which a rename changes, and
	// whether the node holds its own, older number in r.moved (linkino.go).
	linkIno  atomic.Uint64
	linkHeld atomic.Bool

	// Directories, for ListingCache (readdir.go): when the listing was
	// last read for the kernel (UnixNano), whether the kernel may hold a
	// copy of it, and whether a file in it was opened since.
	listedAt     atomic.Int64
	listingCopy  atomic.Bool
	listingStale atomic.Bool

	// The sides of a node that are not FUSE operations, each a view of
	// this node owning one rule over the state above (set once, by
	// setSides).
	bdir backingDir // a directory's backing fd and ID (dirfd.go)
	lnk  symlinkIno // a symlink's inode number across renames (linkino.go)
}

// newNode returns a node for a backing entry (dirID may be nil).
func (r *Root) newNode(dirID []byte) *node {
	n := &node{r: r, dirID: dirID, fd: -1}
	setSides(n)
	return n
}

// setSides points n's views at n.
func setSides(n *node) { n.bdir, n.lnk = backingDir{n}, symlinkIno{n} }

// errno maps err for an operation on n; the path is computed only for
// errors that get logged.
func (n *node) errno(err error, op string) syscall.Errno {
	var e syscall.Errno
	if err == nil {
		return 0
	} else if errors.As(err, &e) {
		return e
	} else if e = fault.Errno(err); e != syscall.EIO {
		return e // a POSIX kind (the engine's errGone...): not logged
	}
	return n.r.errno(err, op, n.plainPath())
}

// plainPath is the node's path below the mount, for log messages.
func (n *node) plainPath() string {
	p := n.Path(n.r.EmbeddedInode())
	if p == "" {
		return "/"
	}
	return "/" + p
}

// nodeOps lets Root and node be told apart from the embedder interface.
type nodeOps interface{ self() *node }

func (n *node) self() *node { return n }

// entry locates a non-root node: its parent's open backing fd, the parent's
// ID and the node's name there. The caller closes pfd.
type entry struct {
	pfd     int
	pid     []byte
	name    engine.Name
	release func()
}

func (n *node) entry() (entry, error) {
	name, parent := n.Parent()
	if parent == nil {
		return entry{}, syscall.ENOENT
	}
	if n.alias.Load() {
		return parent.Operations().(nodeOps).self().existing(name)
	}
	return parent.Operations().(nodeOps).self().child(name)
}

// existing is child for a name that should exist: if the ordinary backing
// name is absent, name may be an alias (engine.Dir.ResolveAlias).
func (n *node) existing(name string) (entry, error) {
	e, err := n.child(name)
	if err != nil {
		return e, err
	}
	e.name = n.r.aliasName(e.pfd, e.pid, n.bdir.dirPlace(), e.name, name)
	return e, nil
}

// aliasName returns the backing name of alias name in directory pfd (ID
// pid, at place pp with location binding): nm, its ordinary name, if that
// exists, else the alias it resolves to (engine.Dir.ResolveAlias), else nm.
func (r *Root) aliasName(pfd int, pid []byte, pp engine.DirPlace, nm engine.Name, name string) engine.Name {
	show := r.opts.ShowUndecryptable
	if !engine.MayBeAlias(name, show) {
		return nm
	}
	if _, err := r.ev.DirAt(pfd, pid, pp).Lstat(nm); !errors.Is(err, unix.ENOENT) {
		return nm
	}
	if an, _, err := r.ev.DirAt(pfd, pid, pp).ResolveAlias(name, show); err == nil {
		return an
	}
	return nm
}

// readOnly returns engine.ErrReadOnly if n is an alias (a conflict copy or an
// undecryptable entry), which is not changed in place: it may be read,
// renamed to a name of its own (adopted) or removed.
func (n *node) readOnly() error {
	if n.alias.Load() {
		return engine.ErrReadOnly
	}
	return nil
}

// child opens directory n and encrypts name for it.
func (n *node) child(name string) (entry, error) {
	fd, id, release, err := n.bdir.openDir()
	if err != nil {
		return entry{}, err
	}
	nm, err := n.r.ev.Name(id, name)
	if err != nil {
		release()
		return entry{}, err
	}
	return entry{pfd: fd, pid: id, name: nm, release: release}, nil
}

// close releases the parent fd.
func (e entry) close() {
	if e.release != nil {
		e.release()
	}
}

// fillAttr converts a backing stat to the plaintext attributes: the size of
// a regular file is its plaintext size (from the open file if there is one,
// since it is authoritative; else from the backing size). of is the file's
// open file if the caller holds it (a handle), else nil: it is looked up.
func (r *Root) fillAttr(st *unix.Stat_t, out *fuse.Attr, of *openFile, what func() string) {
	out.Ino = st.Ino
	out.Mode = st.Mode
	out.Nlink = uint32(st.Nlink)
	out.Uid = st.Uid
	out.Gid = st.Gid
	fuseserver.ApplyOwner(r.opts.ForceOwner, out)
	out.Rdev = uint32(st.Rdev)
	out.Blocks = uint64(st.Blocks)
	out.Blksize = uint32(st.Blksize)
	out.Atime, out.Atimensec = uint64(st.Atim.Sec), uint32(st.Atim.Nsec)
	out.Mtime, out.Mtimensec = uint64(st.Mtim.Sec), uint32(st.Mtim.Nsec)
	out.Ctime, out.Ctimensec = uint64(st.Ctim.Sec), uint32(st.Ctim.Nsec)
	out.Size = uint64(st.Size)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if of == nil {
			if of = r.files.get(st); of != nil {
				defer r.files.put(of)
			}
		}
		if of != nil {
			if size, err := of.Size(); err == nil {
				out.Size = uint64(size)
				return
			}
		}
		size, err := r.ev.PlainSize(st.Size)
		if err != nil {
			r.errno(err, "stat", what())
			size = 0
		}
		out.Size = uint64(size)
	}
}

// statEntry stats a backing entry; a symlink's st_size is its plaintext
// target's length, which programs such as tar use to size their readlink
// buffer.
func (r *Root) statEntry(e entry) (unix.Stat_t, error) {
	st, err := r.entryDir(e).Lstat(e.name)
	if err != nil {
		return st, err
	}
	r.linkSize(e, &st)
	return st, nil
}

// linkSize sets a symlink's st_size to its plaintext target's length (see
// statEntry), computed from the backing sizes without reading the link
// (engine.Dir.LinkSize): a read would move the link's atime. A size that no
// target encodes to is left as it is; readlink reports the corruption.
func (r *Root) linkSize(e entry, st *unix.Stat_t) {
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return
	}
	if size, err := r.entryDir(e).LinkSize(e.name, st); err == nil {
		st.Size = size
	}
}

// newChild turns a backing stat of child name into a child inode of n and
// fills out. Every entry is numbered with its backing inode number; a
// symlink keeps the number its node has after a rename (linkIdentity).
//
// A child the kernel already holds under name with the same identity is
// returned as it is (dirID nil: a lookup, not a mkdir). go-fuse would keep
// that node anyway and drop a new one (its identity table), so this only
// spares the new node, its node ID and the garbage: READDIRPLUS and
// revalidating LOOKUPs find most of their entries known (ls -lR after
// md5sum: one per entry listed). The link count then goes to the node the
// kernel keeps, where it used to go to the dropped one.
func (n *node) newChild(ctx context.Context, st *unix.Stat_t, dirID []byte, out *fuse.EntryOut, name string) *fs.Inode {
	n.r.fillAttr(st, &out.Attr, nil, func() string { return name })
	id := fs.StableAttr{Mode: st.Mode & unix.S_IFMT, Ino: st.Ino}
	if id.Mode == unix.S_IFLNK {
		id = n.lnk.linkIdentity(name, st.Ino)
	}
	child := n.GetChild(name)
	if child == nil || dirID != nil || child.StableAttr() != id {
		child = n.NewInode(ctx, n.r.newNode(dirID), id)
	}
	cn := child.Operations().(nodeOps).self()
	if id.Mode == unix.S_IFLNK {
		cn.linkIno.Store(st.Ino)
	}
	cn.nlink.Store(uint32(st.Nlink))
	return child
}

// Lookup finds a child by plaintext name, as every door into the vault
// does (engine.Dir.Lookup, tree.Resolve): its own encrypted name, else an
// alias.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.r.touch()
	if h := n.r.opts.LookupHook; h != nil {
		h(name)
	}
	fd, id, release, err := n.bdir.openDir()
	if err != nil {
		return nil, n.errno(err, "lookup")
	}
	defer release()
	nm, st, err := n.r.ev.DirAt(fd, id, n.bdir.dirPlace()).Lookup(name, n.r.opts.ShowUndecryptable)
	if err != nil {
		return nil, n.r.errno(err, "lookup", name)
	}
	n.r.linkSize(entry{pfd: fd, pid: id, name: nm}, &st)
	return n.newEntryChild(ctx, &st, nm, out), 0
}

// newEntryChild is newChild for a looked-up entry, marking aliases, which
// are shown without write bits (see readOnly).
func (n *node) newEntryChild(ctx context.Context, st *unix.Stat_t, nm engine.Name, out *fuse.EntryOut) *fs.Inode {
	if nm.Alias() {
		return n.newAliasChild(ctx, st, nm, out)
	}
	child := n.newChild(ctx, st, nil, out, nm.Plain)
	// Not a no-op: a symlink's node is keyed by its backing inode
	// (linkIdentity), so an alias of the same inode (a hard link under a
	// conflict name; newAliasChild leaves symlinks to newChild) may have
	// marked this very node. Found under its own name, it is no alias.
	child.Operations().(nodeOps).self().alias.Store(false)
	return child
}

// maskAlias clears the write bits an alias that is not a directory shows
// (its writes fail with EROFS anyway). A directory alias keeps them: its
// entries may be removed (and new ones are refused by readOnly), which
// the kernel would refuse itself for a directory without write bits when
// it checks permissions (default_permissions).
func (n *node) maskAlias(a *fuse.Attr) {
	if n.alias.Load() && a.Mode&unix.S_IFMT != unix.S_IFDIR {
		a.Mode &^= 0o222
	}
}

// stat returns the node's backing stat: from its open file if it has one
// (works after unlink), else through its parent.
func (n *node) stat() (unix.Stat_t, error) {
	if n == &n.r.node {
		return engine.StatFD(n.r.rootfd)
	}
	if of := n.r.files.forNode(n); of != nil {
		defer n.r.files.put(of)
		return of.Stat()
	}
	if fd, release, ok := n.bdir.cachedFD(); ok {
		// A directory with a cached fd: one fstat, no name encryption.
		// With default_permissions (--allow-other) the kernel asks for a
		// directory's attributes after each change in it, so this is one
		// GETATTR per create or unlink in `tar x` and `rm -rf`.
		defer release()
		return engine.StatFD(fd)
	}
	e, err := n.entry()
	if err != nil {
		return unix.Stat_t{}, err
	}
	defer e.close()
	return n.r.statEntry(e)
}

// Getattr reports the plaintext attributes.
func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.r.touch()
	var st unix.Stat_t
	var err error
	var of *openFile
	if h, ok := f.(*handle); ok {
		of = h.of
	} else if n.r.ev.Roots() { // only files with roots owe writes (below)
		if of = n.r.files.forNode(n); of != nil {
			defer n.r.files.put(of)
		}
	}
	// A file with roots changed through an open handle is settled (its
	// clean header written) before its times are reported: written later,
	// at close, the header would move the mtime a stat has already seen
	// (docs/format.md §16).
	// A settle that fails (a chunk a failed write left damaged) is logged
	// and does not fail the stat: the file stays DIRTY, its reads of that
	// chunk give EIO, and fsck reports it; the attributes are still right.
	if of != nil && of.Roots() {
		if err := of.Settle(); err != nil {
			n.errno(err, "getattr")
		}
	}
	if _, ok := f.(*handle); ok {
		st, err = of.Stat()
	} else {
		st, err = n.stat()
	}
	if err != nil {
		return n.errno(err, "getattr")
	}
	n.r.fillAttr(&st, &out.Attr, of, n.plainPath)
	n.maskAlias(&out.Attr)
	out.Ino = n.StableAttr().Ino
	return 0
}

// Statfs reports CIPHERDIR's filesystem, with the plaintext name limit.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var s unix.Statfs_t
	if err := unix.Fstatfs(n.r.rootfd, &s); err != nil {
		return n.r.errno(err, "statfs", "/")
	}
	out.Blocks, out.Bfree, out.Bavail = s.Blocks, s.Bfree, s.Bavail
	out.Files, out.Ffree = s.Files, s.Ffree
	out.Bsize, out.Frsize = uint32(s.Bsize), uint32(s.Frsize)
	out.NameLen = 255
	return 0
}

var (
	_ fs.NodeLookuper    = (*node)(nil)
	_ fs.NodeGetattrer   = (*node)(nil)
	_ fs.NodeStatfser    = (*node)(nil)
	_ fs.NodeOnForgetter = (*node)(nil)
)
