package forwardfs

import (
	"context"
	"strings"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// xattrObject opens the object an xattr belongs to: the backing fd to act
// on and the object ID (a regular file's fileID, a directory's dirID).
// create makes an empty file's header so that it has an ID; without it, an
// empty file without header has no ID and so no xattrs (id == nil).
// Other file types have no ID: EOPNOTSUPP.
func (n *node) xattrObject(create bool) (fd int, id []byte, done func(), err error) {
	switch n.StableAttr().Mode {
	case unix.S_IFDIR:
		return n.bdir.openDir()
	case unix.S_IFREG:
		of, err := n.acquire()
		if err != nil {
			return -1, nil, nil, err
		}
		done := func() { n.r.files.put(of) }
		if fid, ok := of.ID(); ok {
			return of.Fd(), fid, done, nil
		}
		if !create {
			return of.Fd(), nil, done, nil
		}
		fid, err := of.EnsureID()
		if err != nil {
			done()
			return -1, nil, nil, err
		}
		return of.Fd(), fid, done, nil
	}
	return -1, nil, nil, syscall.EOPNOTSUPP
}

// errNoXattrs is what every xattr call but listxattr answers when the
// backing store keeps no xattrs (Root.noXattrs): EOPNOTSUPP, as a file
// system mounted without user xattrs answers. listxattr gives an empty
// list, so cp -a, rsync -X and tar --xattrs copy files without complaint.
const errNoXattrs = syscall.EOPNOTSUPP

// checkXattrName refuses other namespaces (EOPNOTSUPP) and user.* names
// whose encrypted backing name would exceed the 255-byte xattr name limit
// (ERANGE, as the kernel answers for a name that is too long).
func checkXattrName(attr string) syscall.Errno {
	if !strings.HasPrefix(attr, "user.") {
		return syscall.EOPNOTSUPP
	}
	if len(attr) > engine.MaxXattrName {
		return syscall.ERANGE
	}
	return 0
}

// Getxattr returns a user.* attribute. Other namespaces are not supported
// (EOPNOTSUPP; the mount uses HANDLE_KILLPRIV_V2 so the kernel does not ask
// for security.capability on every write).
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	n.r.touch()
	if errno := checkXattrName(attr); errno != 0 {
		return 0, errno
	}
	if n.r.noXattrs != nil {
		return 0, errNoXattrs
	}
	fd, id, done, err := n.xattrObject(false)
	if err != nil {
		return 0, n.errno(err, "getxattr")
	}
	defer done()
	if id == nil {
		return 0, syscall.ENODATA
	}
	v, err := n.r.ev.ObjectAt(fd, id).GetXattr(attr)
	if err != nil {
		return 0, n.errno(err, "getxattr")
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

// Setxattr stores an encrypted user.* attribute (not on an alias: readOnly).
func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	n.r.touch()
	if err := n.readOnly(); err != nil {
		return n.errno(err, "setxattr")
	}
	if errno := checkXattrName(attr); errno != 0 {
		return errno
	}
	if n.r.noXattrs != nil {
		return errNoXattrs
	}
	fd, id, done, err := n.xattrObject(true)
	if err != nil {
		return n.errno(err, "setxattr")
	}
	defer done()
	return n.errno(n.r.ev.ObjectAt(fd, id).SetXattr(attr, data, int(flags)), "setxattr")
}

// Removexattr removes a user.* attribute (not from an alias: readOnly).
func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	n.r.touch()
	if err := n.readOnly(); err != nil {
		return n.errno(err, "removexattr")
	}
	if errno := checkXattrName(attr); errno != 0 {
		return errno
	}
	if n.r.noXattrs != nil {
		return errNoXattrs
	}
	fd, id, done, err := n.xattrObject(false)
	if err != nil {
		return n.errno(err, "removexattr")
	}
	defer done()
	if id == nil {
		return syscall.ENODATA
	}
	return n.errno(n.r.ev.ObjectAt(fd, id).RemoveXattr(attr), "removexattr")
}

// Listxattr lists the user.* attributes (none for types without an ID).
func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	n.r.touch()
	mode := n.StableAttr().Mode
	if (mode != unix.S_IFDIR && mode != unix.S_IFREG) || n.r.noXattrs != nil {
		return 0, 0
	}
	fd, id, done, err := n.xattrObject(false)
	if err != nil {
		return 0, n.errno(err, "listxattr")
	}
	defer done()
	if id == nil {
		return 0, 0
	}
	list, bad, err := n.r.ev.ObjectAt(fd, id).ListXattr()
	if err != nil {
		return 0, n.errno(err, "listxattr")
	}
	for _, b := range bad {
		if n.r.logged.first(n.plainPath() + " xattr " + b) {
			n.r.logf("listxattr %s: undecryptable attribute %q", n.plainPath(), b)
		}
	}
	size := 0
	for _, a := range list {
		size += len(a) + 1
	}
	if len(dest) < size {
		return uint32(size), syscall.ERANGE
	}
	off := 0
	for _, a := range list {
		off += copy(dest[off:], a)
		dest[off] = 0
		off++
	}
	return uint32(size), 0
}

var (
	_ fs.NodeGetxattrer    = (*node)(nil)
	_ fs.NodeSetxattrer    = (*node)(nil)
	_ fs.NodeRemovexattrer = (*node)(nil)
	_ fs.NodeListxattrer   = (*node)(nil)
)
