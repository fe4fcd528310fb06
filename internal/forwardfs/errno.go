package forwardfs

import (
	"errors"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/fault"
)

// Errno maps an error from tree, core or the backing store to the errno
// the caller sees, by its fault.Kind: a kernel errno passes through
// unchanged; a POSIX kind (tree.ErrNotFound, names.ErrNameTooLong, ...)
// gives its errno; corruption and everything else give EIO. The reverse
// frontend uses it too.
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	if e := fault.Of(err).Errno(); e != 0 {
		return e
	}
	return syscall.EIO
}

// errno is Errno with logging: failed authentication of any kind is EIO,
// logged once per path; an error of no known kind is logged every time
// (what is the path of the object, op is the operation).
func (r *Root) errno(err error, op, what string) syscall.Errno {
	e := Errno(err)
	var kernel syscall.Errno
	if e != syscall.EIO || errors.As(err, &kernel) {
		return e // a POSIX failure or the kernel's own EIO: nothing to log
	}
	if fault.Of(err) == fault.Corrupt {
		if r.logged.first(what) {
			r.logf("%s %q: %v", op, what, err)
		}
		return e
	}
	r.logf("%s %q: unexpected error: %v", op, what, err)
	return e
}
