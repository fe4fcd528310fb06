package forwardfs

import (
	"context"
	"github.com/encryptfs/encryptfs/internal/engine"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// attrTarget is what setattr acts on: an open fd (an open regular file,
// which may be unlinked, or a directory) or an entry of a parent directory
// (a symlink, fifo or device, or a closed regular file).
type attrTarget struct {
	fd int // >= 0: act on this fd
	e  entry
	d  *engine.Dir // e's parent
}

func (t attrTarget) chmod(mode uint32) error {
	if t.fd >= 0 {
		return unix.Fchmod(t.fd, mode)
	}
	return t.d.Chmod(t.e.name, mode)
}

func (t attrTarget) chown(uid, gid int) error {
	if t.fd >= 0 {
		return unix.Fchown(t.fd, uid, gid)
	}
	return t.d.Chown(t.e.name, uid, gid)
}

func (t attrTarget) utimens(ts [2]unix.Timespec) error {
	if t.fd >= 0 {
		// utimensat on /proc/self/fd/N names exactly the open inode.
		return unix.UtimesNanoAt(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(t.fd), ts[:], 0)
	}
	return t.d.Utimens(t.e.name, ts)
}

// Setattr handles truncate, chmod, chown and utimens (to the nanosecond).
// Truncate runs first and the times last, so explicit times survive. An
// alias's attributes do not change (readOnly).
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	n.r.touch()
	if err := n.readOnly(); err != nil {
		return n.errno(err, "setattr")
	}
	var of *openFile
	if h, ok := f.(*handle); ok {
		of = h.of
		of.Hold() // the put below is for every case
	} else if _, ok := in.GetSize(); ok && n.StableAttr().Mode == unix.S_IFREG {
		var err error
		if of, err = n.acquire(); err != nil {
			return n.errno(err, "truncate")
		}
	} else {
		of = n.r.files.forNode(n)
	}
	if of != nil {
		defer n.r.files.put(of)
	}
	t := attrTarget{fd: -1}
	switch {
	case of != nil:
		t.fd = of.Fd()
	case n == &n.r.node:
		t.fd = n.r.rootfd
	case n.StableAttr().Mode == unix.S_IFDIR:
		fd, _, release, err := n.bdir.openDir()
		if err != nil {
			return n.errno(err, "setattr")
		}
		defer release()
		t.fd = fd
	default:
		e, err := n.entry()
		if err != nil {
			return n.errno(err, "setattr")
		}
		defer e.close()
		t.e, t.d = e, n.r.entryDir(e)
	}
	if size, ok := in.GetSize(); ok {
		if of == nil {
			return syscall.EINVAL
		}
		if err := of.Truncate(int64(size)); err != nil {
			return n.errno(err, "truncate")
		}
	}
	if mode, ok := in.GetMode(); ok {
		if err := t.chmod(mode & 0o7777); err != nil {
			return n.errno(err, "chmod")
		}
	} else if in.Valid&fuse.FATTR_KILL_SUIDGID != 0 && of != nil {
		// Truncate or chown by an unprivileged caller (HANDLE_KILLPRIV_V2).
		(&handle{n: n, of: of}).killPriv(ctx)
	}
	uid, gid := -1, -1
	if v, ok := in.GetUID(); ok {
		uid = int(v)
	}
	if v, ok := in.GetGID(); ok {
		gid = int(v)
	}
	if uid != -1 || gid != -1 {
		if err := t.chown(uid, gid); err != nil {
			return n.errno(err, "chown")
		}
	}
	if in.Valid&(fuse.FATTR_ATIME|fuse.FATTR_MTIME) != 0 {
		// The writes an open file still owes its backing (the clean
		// header of file roots, giving back reserved space) go first:
		// made at RELEASE, after these times, they would move the mtime
		// again (tar sets times before it closes).
		if of != nil {
			if err := of.Settle(); err != nil {
				return n.errno(err, "setattr")
			}
		}
		ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if in.Valid&fuse.FATTR_ATIME != 0 {
			ts[0] = unix.Timespec{Sec: int64(in.Atime), Nsec: int64(in.Atimensec)}
			if in.Valid&fuse.FATTR_ATIME_NOW != 0 {
				ts[0] = unix.Timespec{Nsec: unix.UTIME_NOW}
			}
		}
		if in.Valid&fuse.FATTR_MTIME != 0 {
			ts[1] = unix.Timespec{Sec: int64(in.Mtime), Nsec: int64(in.Mtimensec)}
			if in.Valid&fuse.FATTR_MTIME_NOW != 0 {
				ts[1] = unix.Timespec{Nsec: unix.UTIME_NOW}
			}
		}
		if err := t.utimens(ts); err != nil {
			return n.errno(err, "utimens")
		}
	}
	var st unix.Stat_t
	var err error
	if t.fd >= 0 {
		st, err = engine.StatFD(t.fd)
	} else {
		st, err = n.r.statEntry(t.e)
	}
	if err != nil {
		return n.errno(err, "setattr")
	}
	if of != nil {
		of.Mode.Store(st.Mode)
	}
	n.r.fillAttr(&st, &out.Attr, of, n.plainPath)
	out.Ino = n.StableAttr().Ino
	return 0
}

var _ fs.NodeSetattrer = (*node)(nil)
