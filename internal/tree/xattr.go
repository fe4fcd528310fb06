package tree

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"golang.org/x/sys/unix"
)

// Xattrs is the part of a Tree that owns one rule: an extended attribute
// is stored only in the user namespace, its name and value encrypted
// under the object's ID, and never so that the object's backing name list
// outgrows what listxattr(2) can return. Its methods act on an open
// backing fd (a regular file's backing fd, or a directory fd) and the
// object's ID: a regular file's fileID (from fileengine.File.EnsureID, so that
// an empty file gets a header first), a directory's dirID. Only "user."
// names are supported (meta.ErrNotUser otherwise); the FUSE layer maps
// that to EOPNOTSUPP.
type Xattrs struct {
	c    *meta.Xattrs
	rand io.Reader
	fs   *backing.FS // makes every change (nil: unobserved)
}

// userPrefix is the only xattr namespace EncryptFS stores.
const userPrefix = "user."

// backingName checks and encrypts an xattr name.
func (x *Xattrs) backingName(objID []byte, name string) (string, error) {
	if !strings.HasPrefix(name, userPrefix) {
		return "", meta.ErrNotUser
	}
	return x.c.EncryptName(objID, name)
}

// Get returns the plaintext value of xattr name (ENODATA if absent).
func (x *Xattrs) Get(fd int, objID []byte, name string) ([]byte, error) {
	bn, err := x.backingName(objID, name)
	if err != nil {
		return nil, err
	}
	blob, err := backing.Fgetxattr(fd, bn)
	if err != nil {
		return nil, err
	}
	return x.c.OpenValue(objID, bn, blob)
}

// Set encrypts and stores xattr name; flags is 0, unix.XATTR_CREATE or
// unix.XATTR_REPLACE (the backing name is deterministic per object, so the
// backing store enforces both).
//
// A new attribute that would make the object's backing xattr list longer
// than the kernel can return (XattrListMax) is refused with
// ErrXattrListFull: the backing store would take it (tmpfs does), and from
// then on listxattr would fail with E2BIG, so getfattr -d, cp -a, rsync -X
// and tar --xattrs would fail on the file. Encrypted names are longer than
// plaintext ones, so the plaintext list always fits when the backing list
// does.
func (x *Xattrs) Set(fd int, objID []byte, name string, value []byte, flags int) error {
	bn, err := x.backingName(objID, name)
	if err != nil {
		return err
	}
	blob, err := x.c.SealValue(objID, bn, value, x.rand)
	if err != nil {
		return err
	}
	added, size, err := listGrowth(fd, bn)
	if err != nil {
		return err
	}
	if added && size > XattrListMax {
		return fmt.Errorf("%w: %s", ErrXattrListFull, name)
	}
	if err := x.fs.Fsetxattr(fd, bn, blob, flags); err != nil {
		return err
	}
	if added && size > XattrListMax-xattrListSlack {
		// Near the limit a concurrent setxattr on the same object may have
		// taken the room counted above: check again, and take back our
		// attribute if the list no longer fits.
		if _, err := backing.Flistxattr(fd); errors.Is(err, unix.E2BIG) {
			if rerr := x.fs.Fremovexattr(fd, bn); rerr != nil {
				return fmt.Errorf("tree: setxattr %s overflowed the xattr list and could not be undone: %w", name, rerr)
			}
			return fmt.Errorf("%w: %s", ErrXattrListFull, name)
		}
	}
	return nil
}

// XattrListMax is the longest xattr name list listxattr(2) returns
// (the kernel's XATTR_LIST_MAX); a longer one fails with E2BIG.
const XattrListMax = 65536

// xattrListSlack: within this many bytes of XattrListMax, Set checks
// the list again after adding (room for a dozen concurrent adders).
const xattrListSlack = 4096

// listGrowth reports whether backing xattr bn is new on fd and the length
// the backing name list (names and their NULs) has with it.
func listGrowth(fd int, bn string) (added bool, size int, err error) {
	all, err := backing.Flistxattr(fd)
	if errors.Is(err, unix.E2BIG) {
		// Already over the limit (made before this check existed):
		// nothing new fits.
		return true, XattrListMax + 1, nil
	}
	if err != nil {
		return false, 0, err
	}
	added = true
	for _, a := range all {
		size += len(a) + 1
		if a == bn {
			added = false
		}
	}
	if added {
		size += len(bn) + 1
	}
	return added, size, nil
}

// Remove removes xattr name (ENODATA if absent).
func (x *Xattrs) Remove(fd int, objID []byte, name string) error {
	bn, err := x.backingName(objID, name)
	if err != nil {
		return err
	}
	return x.fs.Fremovexattr(fd, bn)
}

// List returns the plaintext names of the object's xattrs. Backing
// xattrs that are not ours (no meta.XattrPrefix) are skipped; ours that fail
// to decrypt are returned in bad, so the caller can log them.
func (x *Xattrs) List(fd int, objID []byte) (list []string, bad []string, err error) {
	all, err := backing.Flistxattr(fd)
	if err != nil {
		return nil, nil, err
	}
	for _, bn := range all {
		name, ok, err := x.c.DecryptName(objID, bn)
		if !ok {
			continue
		}
		if err != nil {
			bad = append(bad, bn)
			continue
		}
		list = append(list, name)
	}
	return list, bad, nil
}

// ProbeXattrs tells whether the backing store under rootfd (the CIPHERDIR
// root) stores extended attributes: nil if it does, ErrNoXattrs (wrapping
// the backing store's answer) if listxattr on the root fails with
// EOPNOTSUPP, ENOSYS or EIO. Some stores (an rclone mount) answer
// EOPNOTSUPP on directories and EIO on files; the doors probe once per
// mount or fsck run and then treat the vault as a file system without
// xattrs, rather than turning every EIO into "no xattrs" and so hiding a
// real I/O error. The answer belongs to the caller (the mount, the fsck
// run), not to the Tree.
func ProbeXattrs(rootfd int) error {
	_, err := backing.Flistxattr(rootfd)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EIO):
		return fmt.Errorf("%w (listxattr on the CIPHERDIR: %v)", ErrNoXattrs, err)
	}
	return fmt.Errorf("tree: listxattr on the CIPHERDIR: %w", err)
}

// IsXattrMissing reports whether err means "no such attribute".
func IsXattrMissing(err error) bool { return errors.Is(err, unix.ENODATA) }
