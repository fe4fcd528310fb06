// Package posix is a POSIX conformance suite in the style of pjdfstest, written
// as Go subtests so that any package's tests can run it against a directory:
// a plain directory or tmpfs (to keep the suite itself honest) and an
// encryptfs mount (to check the filesystem).
//
// The checks are Linux semantics as ext4 and tmpfs implement them: errno
// values, mode and ownership bits, link counts, and which of atime, mtime and
// ctime an operation changes. A filesystem that deliberately lacks a feature
// is exempted only through an explicit Options field, so that nothing is
// skipped silently.
package posix

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Options lets a caller exempt a filesystem from checks of features it does
// not implement. The zero value checks everything; every field set here makes
// the affected subtests call t.Skip with the field's name, so the exemption
// shows up in `go test -v` output.
type Options struct {
	// NoHardLinks: link(2) is not supported (EPERM/ENOTSUP expected elsewhere).
	NoHardLinks bool
	// NoSymlinkHardLinks: link(2) of a symlink is refused (EPERM), for
	// example because a symlink's encrypted target is bound to its name.
	// Hard links of regular files are still checked.
	NoSymlinkHardLinks bool
	// NoChown: ownership cannot be changed (for example, not running as root
	// over a backing store that keeps ownership).
	NoChown bool
	// NoFifo: mkfifo/mknod of FIFOs is not supported.
	NoFifo bool
	// NoRenameExchange: renameat2(RENAME_EXCHANGE) is not supported.
	NoRenameExchange bool
	// NoRenameNoReplace: renameat2(RENAME_NOREPLACE) is not supported.
	NoRenameNoReplace bool
	// NoSymlinkTimes: utimensat(AT_SYMLINK_NOFOLLOW) on a symlink fails.
	NoSymlinkTimes bool
	// NoKillSuidOnWrite: a write by a non-owner does not clear S_ISUID
	// (only used by RunAsOtherUser).
	NoKillSuidOnWrite bool
	// NoLongSymlinks: symlink targets longer than 1024 bytes are refused.
	NoLongSymlinks bool
}

// suiteCase is one named group of checks.
type suiteCase struct {
	name string
	fn   func(t *testing.T, e *env)
}

// cases lists the groups in the order pjdfstest runs them.
func cases() []suiteCase {
	return []suiteCase{
		{"chmod", testChmod},
		{"chown", testChown},
		{"link", testLink},
		{"mkdir", testMkdir},
		{"mkfifo", testMkfifo},
		{"open", testOpen},
		{"rename", testRename},
		{"renameat2", testRenameat2},
		{"rmdir", testRmdir},
		{"symlink", testSymlink},
		{"truncate", testTruncate},
		{"unlink", testUnlink},
		{"utimensat", testUtimensat},
		{"nlink", testNlink},
		{"io", testIO},
		{"names", testNames},
		{"pathmax", testPathMax},
	}
}

// Run runs every check against dir with all features required.
func Run(t *testing.T, dir string) { RunWithOptions(t, dir, Options{}) }

// RunWithOptions runs every check against dir, skipping (visibly) the
// features the caller exempts. Each subtest works in its own fresh
// subdirectory of dir and removes it afterwards.
//
// The process umask is set to 0 for the duration so that requested modes
// are checked exactly; do not run it in parallel with umask-sensitive tests.
// A FUSE server running inside the same test process sees that umask 0 too,
// so a server that wrongly applies its own umask to backing files passes
// here: run the suite against the real, separately started daemon as well.
func RunWithOptions(t *testing.T, dir string, opts Options) {
	t.Helper()
	old := unix.Umask(0)
	t.Cleanup(func() { unix.Umask(old) })
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, newEnv(t, dir, opts))
		})
	}
}
