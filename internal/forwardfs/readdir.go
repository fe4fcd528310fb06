package forwardfs

import (
	"context"
	"errors"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/dircursor"
	"github.com/encryptfs/encryptfs/internal/tree"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// dirHandle is an open directory: the backing fd and the whole decrypted
// listing, read at opendir (and again at rewinddir). It answers READDIRPLUS
// lookups itself from the listing's backing names, so a listing costs one
// fstatat per entry and no name encryption.
type dirHandle struct {
	n       *node
	fd      int
	id      []byte
	entries []tree.Entry
	cur     dircursor.Cursor
}

// OpendirHandle opens and lists a directory.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.r.touch()
	pfd, id, release, err := n.openDir()
	if err != nil {
		return nil, 0, n.errno(err, "opendir")
	}
	// A listing needs its own fd (getdents keeps a position in it).
	fd, err := backing.OpenDir(pfd, ".")
	release()
	if err != nil {
		return nil, 0, n.errno(err, "opendir")
	}
	d := &dirHandle{n: n, fd: fd, id: id}
	if errno := d.load(); errno != 0 {
		backing.Close(fd)
		return nil, 0, errno
	}
	return d, 0, 0
}

// load reads the listing (tree.List, which also decides which conflict
// copies are shown). Entries whose names do not decrypt are logged (once
// per directory and name) and left out of the listing, or, with
// ShowUndecryptable, listed under tree.BadName (unless a good entry has
// that name, or it would be too long). Conflict copies hidden by an entry
// of the same name (tree.ErrShadowed) are never listed.
func (d *dirHandle) load() syscall.Errno {
	ents, bad, err := d.n.r.tree.ListAt(d.fd, d.id, d.n.dirPlace())
	if err != nil {
		return d.n.errno(err, "readdir")
	}
	var shown map[string]bool
	for _, b := range bad {
		what := d.n.plainPath() + " (backing name " + b.Backing + ")"
		if d.n.r.logged.first(what) {
			d.n.r.logf("readdir %s: undecryptable entry %q: %v", d.n.plainPath(), b.Backing, b.Err)
		}
		if !d.n.r.opts.ShowUndecryptable || errors.Is(b.Err, tree.ErrShadowed) {
			continue
		}
		bn, ok := tree.BadName(b.Backing)
		if shown == nil {
			shown = make(map[string]bool, len(ents))
			for _, e := range ents {
				shown[e.Name.Plain] = true
			}
		}
		if ok && !shown[bn.Plain] {
			ents = append(ents, tree.Entry{Name: bn, Ino: b.Ino, Type: b.Type})
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
		ino = d.n.linkNumber(e.Name.Plain, ino)
	}
	return e.Name.Plain, dtToMode(e.Type), ino
}

// Readdirent returns the next entry.
func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	d.n.r.touch()
	return d.cur.Next(d.n.StableAttr().Ino, d), 0
}

// Seekdir moves to an offset returned in a previous entry (0: rewind, which
// re-reads the directory).
func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if d.cur.Seek(off) {
		return d.load()
	}
	return 0
}

// Lookup answers the READDIRPLUS lookup of the entry just returned.
func (d *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
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
	return d.n.errno(backing.Fsync(d.fd), "fsyncdir")
}

// Releasedir closes the backing fd.
func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) { backing.Close(d.fd) }

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
