package forwardfs

import (
	"errors"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/fault"
)

// errno is fault.Errno with logging: failed authentication of any kind is EIO,
// logged once per path; an error of no known kind is logged every time
// (what is the path of the object, op is the operation).
func (r *Root) errno(err error, op, what string) syscall.Errno {
	e := fault.Errno(err)
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
