package forwardfs

import (
	"context"
	"errors"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// setOwner gives a new backing entry to the calling user when the daemon
// runs as root (otherwise everything belongs to the daemon's user). In a
// set-group-ID directory the group inherited from the directory is kept.
func (r *Root) setOwner(ctx context.Context, e entry) error {
	if r.euid != 0 {
		return nil
	}
	c, ok := fuse.FromContext(ctx)
	if !ok || (c.Uid == 0 && c.Gid == 0) {
		return nil
	}
	gid := int(c.Gid)
	d := r.entryDir(e)
	if st, err := d.Stat(); err == nil && st.Mode&unix.S_ISGID != 0 {
		gid = -1
	}
	return d.Chown(e.name, int(c.Uid), gid)
}

// created finishes a create-type operation: chown to the caller, stat, and
// a new child inode. On failure the entry is removed again by undo.
func (n *node) created(ctx context.Context, e entry, dirID []byte, out *fuse.EntryOut, undo func()) (*fs.Inode, syscall.Errno) {
	if err := n.r.setOwner(ctx, e); err != nil {
		undo()
		return nil, n.r.errno(err, "chown", e.name.Plain)
	}
	st, err := n.r.statEntry(e)
	if err != nil {
		undo()
		return nil, n.r.errno(err, "stat", e.name.Plain)
	}
	return n.newChild(ctx, &st, dirID, out, e.name.Plain), 0
}

// Mkdir creates a directory with a fresh directory ID. Create-type
// operations refuse to make entries in an alias directory (readOnly).
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.r.touch()
	if err := n.readOnly(); err != nil {
		return nil, n.errno(err, "mkdir")
	}
	e, err := n.child(name)
	if err != nil {
		return nil, n.r.errno(err, "mkdir", name)
	}
	defer e.close()
	id, err := n.r.entryDir(e).Mkdir(e.name, mode)
	if err != nil {
		return nil, n.r.errno(err, "mkdir", name)
	}
	return n.created(ctx, e, id, out, func() { n.r.entryDir(e).Rmdir(e.name) })
}

// Rmdir removes an empty directory.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	n.r.touch()
	return n.remove(name, "rmdir", func(e entry) error { return n.r.entryDir(e).Rmdir(e.name) })
}

// Unlink removes a non-directory. An open file stays usable through its
// backing fd until its last handle is released.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	n.r.touch()
	// The kernel looked the name up before asking, so its node is
	// normally known here, and with it the file type: a non-symlink needs
	// no readlink to find a long symlink target's sidecar; and a regular
	// file's link count (node.nlink): a file with no other name needs no
	// stat to tell whether a binding outlives the name (location binding,
	// engine.Dir.UnlinkSole; rm -rf paid one fstatat per file). Not
	// trusted when others may change CIPHERDIR.
	mode, sole := uint32(0), false
	if c := n.GetChild(name); c != nil && !n.r.opts.SharedStorage {
		mode = c.StableAttr().Mode & unix.S_IFMT
		sole = mode == unix.S_IFREG && c.Operations().(nodeOps).self().nlink.Load() == 1
	}
	return n.remove(name, "unlink", func(e entry) error {
		if sole {
			return n.r.entryDir(e).UnlinkSole(e.name)
		}
		return n.r.entryDir(e).Unlink(e.name, mode)
	})
}

// remove runs op (unlink or rmdir) on child name: under its ordinary
// backing name first, without checking beforehand that it exists (that
// fstatat measured 9% of the daemon's CPU in `rm -rf`), and only if that
// is absent and name may be an alias, under the alias's backing name
// (engine.Dir.ResolveAlias, as existing does).
func (n *node) remove(name, what string, op func(e entry) error) syscall.Errno {
	e, err := n.child(name)
	if err != nil {
		return n.r.errno(err, what, name)
	}
	defer e.close()
	err = op(e)
	show := n.r.opts.ShowUndecryptable
	if errors.Is(err, unix.ENOENT) && engine.MayBeAlias(name, show) {
		if an, _, aerr := n.r.ev.DirAt(e.pfd, e.pid, n.bdir.dirPlace()).ResolveAlias(name, show); aerr == nil {
			e.name = an
			err = op(e)
		}
	}
	return n.r.errno(err, what, name)
}

// Create creates and opens a regular file.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	n.r.touch()
	if err := n.readOnly(); err != nil {
		return nil, nil, 0, n.errno(err, "create")
	}
	e, err := n.child(name)
	if err != nil {
		return nil, nil, 0, n.r.errno(err, "create", name)
	}
	defer e.close()
	of, err := n.r.entryDir(e).Create(e.name, unix.O_NOATIME, mode, engine.OpenOptions{})
	if errors.Is(err, unix.EEXIST) && flags&unix.O_EXCL == 0 {
		// The kernel believed the name free (a stale negative entry):
		// open(O_CREAT) without O_EXCL opens the existing file.
		return n.openExisting(ctx, e, flags, out)
	}
	if err != nil {
		return nil, nil, 0, n.r.errno(err, "create", name)
	}
	child, errno := n.created(ctx, e, nil, out, func() { n.r.entryDir(e).Unlink(e.name, 0) })
	if errno != 0 {
		n.r.files.put(of)
		return nil, nil, 0, errno
	}
	cn := child.Operations().(nodeOps).self()
	n.r.files.bind(of, cn)
	h := newHandle(cn, of, flags)
	return child, h, n.r.openFuseFlags() | n.r.noFlush(flags), 0
}

// openExisting opens the existing regular file e for Create.
func (n *node) openExisting(ctx context.Context, e entry, flags uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	st, err := n.r.statEntry(e)
	if err != nil {
		return nil, nil, 0, n.r.errno(err, "create", e.name.Plain)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, nil, 0, syscall.EEXIST
	}
	want := engine.FileKey{Dev: uint64(st.Dev), Ino: st.Ino}
	of, err := n.r.entryDir(e).Open(e.name, engine.OpenOptions{Want: want, ReadWrite: true, NoAtime: true})
	if err != nil {
		return nil, nil, 0, n.r.errno(err, "create", e.name.Plain)
	}
	if flags&unix.O_TRUNC != 0 {
		if err := of.Truncate(0); err != nil {
			n.r.files.put(of)
			return nil, nil, 0, n.r.errno(err, "create", e.name.Plain)
		}
	}
	child := n.newChild(ctx, &st, nil, out, e.name.Plain)
	cn := child.Operations().(nodeOps).self()
	n.r.files.bind(of, cn)
	h := newHandle(cn, of, flags)
	return child, h, n.r.keepCache(of) | n.r.noFlush(flags), 0
}

// Mknod creates a fifo, socket, device node or empty regular file.
func (n *node) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.r.touch()
	if err := n.readOnly(); err != nil {
		return nil, n.errno(err, "mknod")
	}
	e, err := n.child(name)
	if err != nil {
		return nil, n.r.errno(err, "mknod", name)
	}
	defer e.close()
	if err := n.r.entryDir(e).Mknod(e.name, mode, uint64(dev)); err != nil {
		return nil, n.r.errno(err, "mknod", name)
	}
	return n.created(ctx, e, nil, out, func() { n.r.entryDir(e).Unlink(e.name, 0) })
}

// Symlink creates a symlink whose target is encrypted and bound to its
// directory and name.
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.r.touch()
	if err := n.readOnly(); err != nil {
		return nil, n.errno(err, "symlink")
	}
	if len(target) >= unix.PathMax {
		return nil, syscall.ENAMETOOLONG
	}
	e, err := n.child(name)
	if err != nil {
		return nil, n.r.errno(err, "symlink", name)
	}
	defer e.close()
	if err := n.r.entryDir(e).Symlink(e.name, target); err != nil {
		return nil, n.r.errno(err, "symlink", name)
	}
	return n.created(ctx, e, nil, out, func() { n.r.entryDir(e).Unlink(e.name, 0) })
}

// Readlink decrypts a symlink target.
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	n.r.touch()
	e, err := n.entry()
	if err != nil {
		return nil, n.errno(err, "readlink")
	}
	defer e.close()
	target, err := n.r.entryDir(e).Readlink(e.name)
	if errors.Is(err, unix.EINVAL) {
		// A rename put a non-symlink under the name after the kernel's
		// lookup: the symlink that was looked up is gone (see acquire).
		return nil, syscall.ENOENT
	}
	if err != nil {
		return nil, n.errno(err, "readlink")
	}
	return []byte(target), 0
}

// Link makes a hard link. Symlinks cannot be hard-linked (EPERM): their
// encrypted target is bound to one directory and name.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.r.touch()
	if err := n.readOnly(); err != nil {
		return nil, n.errno(err, "link")
	}
	tn := target.(nodeOps).self()
	if tn.StableAttr().Mode == unix.S_IFLNK {
		return nil, syscall.EPERM
	}
	te, err := tn.entry()
	if err != nil {
		return nil, n.r.errno(err, "link", name)
	}
	defer te.close()
	e, err := n.child(name)
	if err != nil {
		return nil, n.r.errno(err, "link", name)
	}
	defer e.close()
	if err := n.r.entryDir(te).Link(te.name, n.r.entryDir(e), e.name); err != nil {
		return nil, n.r.errno(err, "link", name)
	}
	st, err := n.r.statEntry(e)
	if err != nil {
		return nil, n.r.errno(err, "link", name)
	}
	// The target's node is the one the kernel keeps for both names (the
	// node newChild makes is dropped for it: same inode number), so its
	// link count is brought up here, before any unlink can use it.
	tn.nlink.Store(uint32(st.Nlink))
	return n.newChild(ctx, &st, nil, out, name), 0
}

// Rename renames within or between directories; flags may be
// RENAME_NOREPLACE or RENAME_EXCHANGE.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	n.r.touch()
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 {
		return syscall.EINVAL
	}
	oe, err := n.existing(name)
	if err != nil {
		return n.r.errno(err, "rename", name)
	}
	defer oe.close()
	np := newParent.(nodeOps).self()
	if err := np.readOnly(); err != nil {
		// New entries are not made in an alias directory (an entry
		// may be moved out of it, as it may be removed).
		return np.errno(err, "rename")
	}
	ne, err := np.existing(newName)
	if err != nil {
		return n.r.errno(err, "rename", newName)
	}
	defer ne.close()
	moved, replaced := n.GetChild(name), np.GetChild(newName)
	err = n.r.entryDir(oe).Rename(oe.name, n.r.entryDir(ne), ne.name, uint(flags))
	if err != nil {
		return n.r.errno(err, "rename", name)
	}
	// Whether a node's backing name is an alias follows the name it moves
	// to; a symlink's backing link was re-created (relinked).
	if moved != nil {
		mn := moved.Operations().(nodeOps).self()
		mn.alias.Store(ne.name.Alias())
		mn.relinked(ne)
	}
	if replaced != nil && flags&unix.RENAME_EXCHANGE != 0 {
		rn := replaced.Operations().(nodeOps).self()
		rn.alias.Store(oe.name.Alias())
		rn.relinked(oe)
	}
	return 0
}

// relinked tells symlink node n, just renamed to e, the inode number of
// its re-created backing link (linkMoved).
func (n *node) relinked(e entry) {
	if n.StableAttr().Mode != unix.S_IFLNK {
		return
	}
	if st, err := n.r.entryDir(e).Lstat(e.name); err == nil {
		n.lnk.linkMoved(st.Ino)
	}
}

var (
	_ fs.NodeMkdirer    = (*node)(nil)
	_ fs.NodeRmdirer    = (*node)(nil)
	_ fs.NodeUnlinker   = (*node)(nil)
	_ fs.NodeCreater    = (*node)(nil)
	_ fs.NodeMknoder    = (*node)(nil)
	_ fs.NodeSymlinker  = (*node)(nil)
	_ fs.NodeReadlinker = (*node)(nil)
	_ fs.NodeLinker     = (*node)(nil)
	_ fs.NodeRenamer    = (*node)(nil)
)
