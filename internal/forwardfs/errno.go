package forwardfs

import (
	"errors"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/fault"
)

// badRootHint follows a logged file-root mismatch: it is what a power
// loss leaves in a file changed since its last fsync as well as what
// tampering leaves (docs/format.md §16, "Durability"), and fsck is where
// the user tells them apart and repairs the first.
const badRootHint = " (file roots: changed since its last fsync before a power loss or kernel crash, or tampered; run encryptfs fsck: --repair re-roots the file if every chunk authenticates)"

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
			hint := ""
			if engine.IsBadRoot(err) {
				hint = badRootHint
			}
			r.logf("%s %q: %v%s", op, what, err, hint)
		}
		return e
	}
	r.logf("%s %q: unexpected error: %v", op, what, err)
	return e
}
