package reversefs

import (
	"context"
	"errors"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/fuseserver"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is every entry of the view. It remembers what it shows (kind) and
// the plaintext path of that object; both are fixed for the node's life
// (a plaintext rename makes a new node, see stableAttr).
type node struct {
	fs.Inode
	r    *Root
	kind kind
	rel  string
}

// virtualIno marks the inode numbers of virtual files, which have no
// plaintext inode of their own.
const virtualIno = 1 << 63

// pathHash is the keyed number of a kind and a path
// (engine.Reverse.InodeNumber): stable across mounts with the same key, and
// no use for testing guesses of plaintext paths without it.
func (r *Root) pathHash(k kind, rel string) uint64 {
	return r.v.InodeNumber(k, rel)
}

// stableAttr identifies a view entry to go-fuse. Plaintext objects keep
// their inode number (so hard links and `ls -i` look as in PLAINDIR), with
// the generation set from the path: an inode is shown under one path only,
// because its fileID and directory ID are derived from that path. Virtual
// files get an inode number derived from their kind and path under the
// reverse key (bit 63 set, the rest keyed), the same on every mount.
func (r *Root) stableAttr(e viewEntry) fs.StableAttr {
	h := r.pathHash(e.Kind, e.Rel)
	if e.Kind.Virtual() {
		return fs.StableAttr{Mode: unix.S_IFREG, Ino: virtualIno | h&(virtualIno-1), Gen: 1}
	}
	ino := e.St.Ino
	if ino == ^uint64(0) { // reserved by go-fuse
		ino = virtualIno | h&(virtualIno-1)
	}
	return fs.StableAttr{Mode: e.St.Mode & unix.S_IFMT, Ino: ino, Gen: h}
}

// RootAttr is the StableAttr of the view's root directory, for go-fuse's
// Options.RootStableAttr: the root keeps PLAINDIR's inode number, as
// every other directory of the view keeps its own.
func (r *Root) RootAttr() (fs.StableAttr, error) {
	st, err := r.v.Lstat("")
	if err != nil {
		return fs.StableAttr{}, err
	}
	return r.stableAttr(viewEntry{Kind: kindDir, St: st}), nil
}

// errno maps an error to an errno (fault.Errno, as in forward mode),
// logging those not from the kernel with the path. The engine's answers
// about the view itself (no such entry, a changed entry, no virtual file)
// are errnos of the view, not failures, and are not logged.
func (r *Root) errno(err error, op, rel string) syscall.Errno {
	switch {
	case errors.Is(err, engine.ErrNoEntry):
		return syscall.ENOENT
	case errors.Is(err, engine.ErrStale):
		return syscall.ESTALE
	case errors.Is(err, engine.ErrNotVirtual):
		return syscall.EINVAL
	}
	var kernel syscall.Errno
	if err != nil && !errors.As(err, &kernel) {
		r.logf("%s %q: %v", op, "/"+rel, err)
	}
	return fault.Errno(err)
}

// fillAttr turns a view entry, whose identity is sa (stableAttr), into
// attributes: times, owner, mode and
// inode pass through from the plaintext object; sizes are the ciphertext
// sizes; virtual files are read-only regular files of their content's size.
func (r *Root) fillAttr(e viewEntry, sa fs.StableAttr, out *fuse.Attr) error {
	st := &e.St
	out.Ino = sa.Ino
	out.Mode = st.Mode
	out.Nlink = uint32(st.Nlink)
	out.Uid, out.Gid = st.Uid, st.Gid
	fuseserver.ApplyOwner(r.owner, out)
	out.Rdev = uint32(st.Rdev)
	out.Blksize = uint32(st.Blksize)
	out.Atime, out.Atimensec = uint64(st.Atim.Sec), uint32(st.Atim.Nsec)
	out.Mtime, out.Mtimensec = uint64(st.Mtim.Sec), uint32(st.Mtim.Nsec)
	out.Ctime, out.Ctimensec = uint64(st.Ctim.Sec), uint32(st.Ctim.Nsec)
	out.Size, out.Blocks = uint64(st.Size), uint64(st.Blocks)
	switch e.Kind {
	case kindFile:
		out.Size = uint64(r.v.CipherSize(st.Size))
		out.Blocks = (out.Size + 511) / 512
	case kindSymlink:
		target, err := r.v.Target(e.Rel)
		if err != nil {
			return err
		}
		out.Size = uint64(len(target))
		out.Blocks = 0
	case kindDirID, kindNameSidecar, kindLinkSidecar, kindConfig:
		data, err := r.v.Content(e.Kind, e.Rel)
		if err != nil {
			return err
		}
		out.Mode = unix.S_IFREG | 0o444
		if e.Kind == kindConfig {
			out.Mode = unix.S_IFREG | st.Mode&0o7777
		}
		out.Nlink, out.Rdev = 1, 0
		out.Size, out.Blocks = uint64(len(data)), (uint64(len(data))+511)/512
	}
	return nil
}

// newChild makes (or finds) the inode of a view entry below n.
func (n *node) newChild(ctx context.Context, e viewEntry, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	sa := n.r.stableAttr(e) // a keyed hash: computed once
	if err := n.r.fillAttr(e, sa, &out.Attr); err != nil {
		return nil, n.r.errno(err, "lookup", e.Rel)
	}
	child := &node{r: n.r, kind: e.Kind, rel: e.Rel}
	return n.NewInode(ctx, child, sa), 0
}

// Lookup finds a view entry of directory n.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.kind != kindDir {
		return nil, syscall.ENOTDIR
	}
	e, err := n.r.v.Lookup(n.rel, name)
	if err != nil {
		return nil, n.r.errno(err, "lookup", join(n.rel, name))
	}
	return n.newChild(ctx, e, out)
}

// entry re-reads the node's plaintext object.
func (n *node) entry() (viewEntry, error) {
	st, err := n.r.v.Restat(n.kind, n.rel)
	return viewEntry{Kind: n.kind, Rel: n.rel, St: st}, err
}

// Getattr reports the view attributes. An open file reports the size it
// was opened with, so that size and contents agree.
func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	e, err := n.entry()
	if err != nil {
		return n.r.errno(err, "getattr", n.rel)
	}
	if h, ok := f.(*fileHandle); ok {
		e.St.Size = h.f.PlainSize()
	}
	if err := n.r.fillAttr(e, n.r.stableAttr(e), &out.Attr); err != nil {
		return n.r.errno(err, "getattr", n.rel)
	}
	return 0
}

// Readlink returns the encrypted target (or the long-target marker).
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	if n.kind != kindSymlink {
		return nil, syscall.EINVAL
	}
	target, err := n.r.v.Target(n.rel)
	if err != nil {
		return nil, n.r.errno(err, "readlink", n.rel)
	}
	return []byte(target), 0
}

// Statfs reports PLAINDIR's filesystem.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	s, err := n.r.v.Statfs()
	if err != nil {
		return n.r.errno(err, "statfs", "")
	}
	out.Blocks, out.Bfree, out.Bavail = s.Blocks, s.Bfree, s.Bavail
	out.Files, out.Ffree = s.Files, s.Ffree
	out.Bsize, out.Frsize = uint32(s.Bsize), uint32(s.Frsize)
	out.NameLen = engine.MaxNameLen
	return 0
}

// Getxattr: the view has no extended attributes in v1 (docs/reverse.md).
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENODATA
}

// Listxattr: the view has no extended attributes in v1.
func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return 0, 0
}

var (
	_ fs.NodeLookuper    = (*node)(nil)
	_ fs.NodeGetattrer   = (*node)(nil)
	_ fs.NodeReadlinker  = (*node)(nil)
	_ fs.NodeStatfser    = (*node)(nil)
	_ fs.NodeGetxattrer  = (*node)(nil)
	_ fs.NodeListxattrer = (*node)(nil)
)
