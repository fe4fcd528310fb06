// Package backing wraps the *at system calls EncryptFS uses on CIPHERDIR.
//
// Every access goes through a directory file descriptor and a single path
// component, never through a full path, and never follows a symlink in the
// backing store: a directory is reached from the CIPHERDIR root with openat2
// and RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, and the last component is used with
// O_NOFOLLOW or AT_SYMLINK_NOFOLLOW. So a user who can write to CIPHERDIR
// while it is mounted cannot redirect the daemon outside it with a symlink
// race (the class of bug gocryptfs fixed in its v2 "openat" rework).
//
// Errors are returned as they come from the kernel (unix.Errno, possibly
// wrapped): the FUSE layer passes them through unchanged.
package backing

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// resolveBeneath keeps openat2 inside the root fd and refuses every symlink,
// including /proc magic links, on the way.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// ErrBadComponent is returned for a name that is not a single path component.
var ErrBadComponent = errors.New("backing: name must be a single path component")

// retry repeats f while it fails with EINTR. FUSE daemons get EINTR from
// signals (the Go runtime's preemption signals among them) on slow backing
// stores such as network filesystems.
func retry(f func() error) error {
	for {
		err := f()
		if err != unix.EINTR {
			return err
		}
	}
}

// retryN is retry for calls that return a count or fd.
func retryN(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != unix.EINTR {
			return n, err
		}
	}
}

// checkName refuses anything but one path component, so a forged or buggy
// name can never walk out of its directory.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("%w: %q", ErrBadComponent, name)
	}
	return nil
}

// OpenRoot opens the CIPHERDIR root directory. Symlinks in the path given by
// the user are followed (the user chose it); nothing below it is.
func OpenRoot(path string) (int, error) {
	fd, err := retryN(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, fmt.Errorf("backing: open root %q: %w", path, err)
	}
	return fd, nil
}

// OpenDir opens the directory at rel (slash-separated, relative to rootfd;
// "" or "." is the root itself) for reading, refusing symlinks and any
// escape from rootfd. If the directory cannot be read (for example mode
// 0111 while not running as root) it falls back to an O_PATH descriptor,
// which still works for every *at call but not for listing or xattrs.
func OpenDir(rootfd int, rel string) (int, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: resolveBeneath,
	}
	fd, err := retryN(func() (int, error) { return unix.Openat2(rootfd, rel, &how) })
	if err == unix.EACCES {
		how.Flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		fd, err = retryN(func() (int, error) { return unix.Openat2(rootfd, rel, &how) })
	}
	if err != nil {
		return -1, err
	}
	return fd, nil
}

// errWouldChange: Openat was asked to create or truncate, which only
// (*FS).Openat does (it reports the change).
var errWouldChange = errors.New("backing: creating or truncating goes through (*FS).Openat")

// Openat opens an existing entry of dirfd without following a symlink (a
// symlink gives ELOOP). O_CLOEXEC is always added. It never creates or
// truncates: flags with O_CREAT or O_TRUNC fail with errWouldChange,
// because every change to CIPHERDIR goes through (*FS).Openat, which
// reports it.
func Openat(dirfd int, name string, flags int) (int, error) {
	if flags&(unix.O_CREAT|unix.O_TRUNC) != 0 {
		return -1, fmt.Errorf("%w: Openat %s", errWouldChange, name)
	}
	return openat(dirfd, name, flags, 0)
}

// openat opens one entry of dirfd without following a symlink (a symlink
// gives ELOOP). O_CLOEXEC is always added.
func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	if err := checkName(name); err != nil {
		return -1, err
	}
	return retryN(func() (int, error) {
		return unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	})
}

// OpenSubdir opens the directory entry name of dirfd like OpenDir does.
func OpenSubdir(dirfd int, name string) (int, error) {
	if err := checkName(name); err != nil {
		return -1, err
	}
	return OpenDir(dirfd, name)
}

// OpenPath opens the directory at the components names below rootfd (none:
// rootfd itself) like OpenDir: one openat2 for the whole path, with
// RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS checking every component, so
// finding a directory d levels down costs one open and one close rather
// than d of each. Each component is checked as OpenSubdir checks it; a
// path longer than PATH_MAX is opened one component at a time.
func OpenPath(rootfd int, names []string) (int, error) {
	n := 0
	for _, name := range names {
		if err := checkName(name); err != nil {
			return -1, err
		}
		n += len(name) + 1
	}
	if n < unix.PathMax {
		return OpenDir(rootfd, strings.Join(names, "/"))
	}
	fd, err := OpenDir(rootfd, "")
	for _, name := range names {
		if err != nil {
			break
		}
		var sub int
		sub, err = OpenDir(fd, name)
		Close(fd)
		fd = sub
	}
	if err != nil {
		return -1, err
	}
	return fd, nil
}

// Close closes fd, ignoring EINTR (Linux always releases the fd).
func Close(fd int) error {
	err := unix.Close(fd)
	if err == unix.EINTR {
		return nil
	}
	return err
}

// mkdirat creates directory name in dirfd.
func mkdirat(dirfd int, name string, mode uint32) error {
	if err := checkName(name); err != nil {
		return err
	}
	return retry(func() error { return unix.Mkdirat(dirfd, name, mode) })
}

// unlinkat removes a non-directory entry (flags 0) or an empty directory
// (unix.AT_REMOVEDIR).
func unlinkat(dirfd int, name string, flags int) error {
	if err := checkName(name); err != nil {
		return err
	}
	return retry(func() error { return unix.Unlinkat(dirfd, name, flags) })
}

// renameat2 renames within or across directories of the backing store;
// flags are unix.RENAME_NOREPLACE, unix.RENAME_EXCHANGE or 0.
func renameat2(olddirfd int, oldname string, newdirfd int, newname string, flags uint) error {
	if err := checkName(oldname); err != nil {
		return err
	}
	if err := checkName(newname); err != nil {
		return err
	}
	return retry(func() error { return unix.Renameat2(olddirfd, oldname, newdirfd, newname, flags) })
}

// linkat makes newname a hard link to oldname; a symlink is linked itself,
// never followed (flags 0).
func linkat(olddirfd int, oldname string, newdirfd int, newname string) error {
	if err := checkName(oldname); err != nil {
		return err
	}
	if err := checkName(newname); err != nil {
		return err
	}
	return retry(func() error { return unix.Linkat(olddirfd, oldname, newdirfd, newname, 0) })
}

// symlinkat creates symlink name in dirfd pointing to target.
func symlinkat(target string, dirfd int, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return retry(func() error { return unix.Symlinkat(target, dirfd, name) })
}

// Readlinkat reads the target of symlink name in dirfd (at most 4096 bytes,
// the Linux PATH_MAX, which bounds every backing target).
func Readlinkat(dirfd int, name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	buf := make([]byte, unix.PathMax+1)
	n, err := retryN(func() (int, error) { return unix.Readlinkat(dirfd, name, buf) })
	if err != nil {
		return "", err
	}
	if n > unix.PathMax {
		// No Linux file system stores a longer target: the backing is
		// damaged or not what it claims to be.
		return "", fmt.Errorf("%w: symlink target over %d bytes", ErrTooBig, unix.PathMax)
	}
	return string(buf[:n]), nil
}

// mknodat creates a device node, fifo or socket entry.
func mknodat(dirfd int, name string, mode uint32, dev uint64) error {
	if err := checkName(name); err != nil {
		return err
	}
	return retry(func() error { return unix.Mknodat(dirfd, name, mode, int(dev)) })
}

// Fstatat stats entry name of dirfd without following a symlink; "" stats
// dirfd itself.
func Fstatat(dirfd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	flags := unix.AT_SYMLINK_NOFOLLOW
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	} else if err := checkName(name); err != nil {
		return st, err
	}
	err := retry(func() error { return unix.Fstatat(dirfd, name, &st, flags) })
	return st, err
}

// Fstat stats an open fd.
func Fstat(fd int) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := retry(func() error { return unix.Fstat(fd, &st) })
	return st, err
}

// Fchmodat changes the mode of entry name without following a symlink
// (fchmodat2 with AT_SYMLINK_NOFOLLOW, Linux 6.6+; symlinks have no mode and
// give EOPNOTSUPP).
func Fchmodat(dirfd int, name string, mode uint32) error {
	if err := checkName(name); err != nil {
		return err
	}
	return retry(func() error { return unix.Fchmodat(dirfd, name, mode, unix.AT_SYMLINK_NOFOLLOW) })
}

// Fchownat changes the owner of entry name (-1 keeps a field) without
// following a symlink.
func Fchownat(dirfd int, name string, uid, gid int) error {
	if err := checkName(name); err != nil {
		return err
	}
	return retry(func() error { return unix.Fchownat(dirfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW) })
}

// UtimesNanoAt sets atime and mtime of entry name without following a
// symlink. ts[i].Nsec may be unix.UTIME_OMIT or unix.UTIME_NOW.
func UtimesNanoAt(dirfd int, name string, ts [2]unix.Timespec) error {
	if err := checkName(name); err != nil {
		return err
	}
	return retry(func() error { return unix.UtimesNanoAt(dirfd, name, ts[:], unix.AT_SYMLINK_NOFOLLOW) })
}

// fsync flushes fd's data and metadata.
func fsync(fd int) error {
	return retry(func() error { return unix.Fsync(fd) })
}

// fsyncDirAt opens directory entry name of dirfd (or dirfd itself for "")
// and fsyncs it, so that an entry just created in it survives a crash.
func fsyncDirAt(dirfd int, name string) error {
	if name == "" {
		name = "."
	} else if err := checkName(name); err != nil {
		return err
	}
	fd, err := retryN(func() (int, error) {
		return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return err
	}
	defer Close(fd)
	return fsync(fd)
}
