package reversefs

import (
	"context"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/dircursor"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// dirHandle is an open view directory: the whole listing, computed at
// opendir (and again on rewind). It answers READDIRPLUS lookups from the
// listing, so a long name or sidecar costs no second listing.
type dirHandle struct {
	n       *node
	entries []viewEntry
	cur     dircursor.Cursor
}

// OpendirHandle lists a directory.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.kind != kindDir {
		return nil, 0, syscall.ENOTDIR
	}
	d := &dirHandle{n: n}
	if errno := d.load(); errno != 0 {
		return nil, 0, errno
	}
	return d, 0, 0
}

func (d *dirHandle) load() syscall.Errno {
	ents, err := d.n.r.v.List(d.n.rel)
	if err != nil {
		return d.n.r.errno(err, "readdir", d.n.rel)
	}
	d.entries = ents
	return 0
}

// Len and Entry make the listing a dircursor.Listing.
func (d *dirHandle) Len() int { return len(d.entries) }

// Entry describes listing entry i.
func (d *dirHandle) Entry(i int) (string, uint32, uint64) {
	sa := d.n.r.stableAttr(d.entries[i])
	return d.entries[i].Name, sa.Mode, sa.Ino
}

// Readdirent returns the next entry.
func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return d.cur.Next(d.n.StableAttr().Ino, d), 0
}

// Seekdir moves to an offset from an earlier entry (0 rewinds and lists
// the directory again).
func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if d.cur.Seek(off) {
		return d.load()
	}
	return 0
}

// Lookup answers the READDIRPLUS lookup of the entry just returned.
func (d *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	i := d.cur.Last()
	if i < 0 || i >= len(d.entries) || d.entries[i].Name != name {
		return d.n.Lookup(ctx, name, out)
	}
	return d.n.newChild(ctx, d.entries[i], out)
}

// Releasedir drops the listing.
func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) { d.entries = nil }

// The view is read-only: every operation that would change it fails with
// EROFS (the mount is also "ro", so the kernel normally answers first).

// Setattr fails: read-only.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}

// Create fails: read-only.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}

// Mkdir fails: read-only.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Mknod fails: read-only.
func (n *node) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Link fails: read-only.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Symlink fails: read-only.
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Unlink fails: read-only.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno { return syscall.EROFS }

// Rmdir fails: read-only.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno { return syscall.EROFS }

// Rename fails: read-only.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EROFS
}

// Setxattr fails: read-only.
func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.EROFS
}

// Removexattr fails: read-only.
func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno { return syscall.EROFS }

var (
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.FileReaddirenter   = (*dirHandle)(nil)
	_ fs.FileLookuper       = (*dirHandle)(nil)
	_ fs.FileSeekdirer      = (*dirHandle)(nil)
	_ fs.FileReleasedirer   = (*dirHandle)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeSetxattrer     = (*node)(nil)
	_ fs.NodeRemovexattrer  = (*node)(nil)
)
