package fs

import (
	"errors"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// errno maps an error from tree, core or the backing store to the errno the
// caller sees. Failed authentication of any kind is EIO, logged once per
// path (what is the path of the object, op is the operation).
func (r *Root) errno(err error, op, what string) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, names.ErrNameTooLong):
		return syscall.ENAMETOOLONG
	case errors.Is(err, names.ErrInvalidName), errors.Is(err, backing.ErrBadComponent):
		return syscall.EINVAL
	case errors.Is(err, meta.ErrNotUser):
		return syscall.EOPNOTSUPP
	case errors.Is(err, meta.ErrTooLong):
		return syscall.E2BIG
	case errors.Is(err, core.ErrTooLarge):
		return syscall.EFBIG
	case errors.Is(err, names.ErrBadName), errors.Is(err, meta.ErrCorrupt),
		errors.Is(err, content.ErrCorruptChunk), errors.Is(err, content.ErrBadHeader),
		errors.Is(err, content.ErrTruncated), errors.Is(err, tree.ErrCorruptDir),
		errors.Is(err, backing.ErrTooBig):
		if r.logged.first(what) {
			r.logf("%s %q: %v", op, what, err)
		}
		return syscall.EIO
	}
	r.logf("%s %q: unexpected error: %v", op, what, err)
	return syscall.EIO
}
