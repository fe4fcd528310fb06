package tree

import (
	"errors"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"golang.org/x/sys/unix"
)

// The xattr methods act on an open backing fd (a regular file's backing fd,
// or a directory fd) and the object's ID: a regular file's fileID (from
// core.File.EnsureID, so that an empty file gets a header first), a
// directory's dirID. Only "user." names are supported (meta.ErrNotUser
// otherwise); the FUSE layer maps that to EOPNOTSUPP.

// userPrefix is the only xattr namespace EncryptFS stores.
const userPrefix = "user."

// backingXattr checks and encrypts an xattr name.
func (t *Tree) backingXattr(objID []byte, name string) (string, error) {
	if !strings.HasPrefix(name, userPrefix) {
		return "", meta.ErrNotUser
	}
	return t.xattrs.EncryptName(objID, name)
}

// GetXattr returns the plaintext value of xattr name (ENODATA if absent).
func (t *Tree) GetXattr(fd int, objID []byte, name string) ([]byte, error) {
	bn, err := t.backingXattr(objID, name)
	if err != nil {
		return nil, err
	}
	blob, err := backing.Fgetxattr(fd, bn)
	if err != nil {
		return nil, err
	}
	return t.xattrs.OpenValue(objID, bn, blob)
}

// SetXattr encrypts and stores xattr name; flags is 0, unix.XATTR_CREATE or
// unix.XATTR_REPLACE (the backing name is deterministic per object, so the
// backing store enforces both).
func (t *Tree) SetXattr(fd int, objID []byte, name string, value []byte, flags int) error {
	bn, err := t.backingXattr(objID, name)
	if err != nil {
		return err
	}
	blob, err := t.xattrs.SealValue(objID, bn, value, t.rand)
	if err != nil {
		return err
	}
	return backing.Fsetxattr(fd, bn, blob, flags)
}

// RemoveXattr removes xattr name (ENODATA if absent).
func (t *Tree) RemoveXattr(fd int, objID []byte, name string) error {
	bn, err := t.backingXattr(objID, name)
	if err != nil {
		return err
	}
	return backing.Fremovexattr(fd, bn)
}

// ListXattr returns the plaintext names of the object's xattrs. Backing
// xattrs that are not ours (no meta.XattrPrefix) are skipped; ours that fail
// to decrypt are returned in bad, so the caller can log them.
func (t *Tree) ListXattr(fd int, objID []byte) (list []string, bad []string, err error) {
	all, err := backing.Flistxattr(fd)
	if err != nil {
		return nil, nil, err
	}
	for _, bn := range all {
		name, ok, err := t.xattrs.DecryptName(objID, bn)
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

// IsXattrMissing reports whether err means "no such attribute".
func IsXattrMissing(err error) bool { return errors.Is(err, unix.ENODATA) }
