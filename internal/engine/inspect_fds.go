package engine

import (
	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// The raw reads of CIPHERDIR an offline check makes by directory fd, on
// top of the fds of fds.go (OpenRootFD, OpenDirFD, OpenSubdirFD, CloseFD,
// StatFD). Each goes through internal/backing: beneath the fd, no symlink
// followed, no FIFO opened.

// StatAtFD is the lstat of name in dirfd.
func StatAtFD(dirfd int, name string) (unix.Stat_t, error) { return backing.Fstatat(dirfd, name) }

// ListFD lists every name of directory fd but "." and "..".
func ListFD(fd int) ([]Dirent, error) { return backing.ReadDir(fd) }

// OpenRegularFD opens name in dirfd with flags if it is a regular file
// (ErrNotRegular otherwise: a FIFO planted at the name does not hang the
// caller), and returns its stat.
func OpenRegularFD(dirfd int, name string, flags int) (int, unix.Stat_t, error) {
	return backing.OpenRegular(dirfd, name, flags)
}

// ReadlinkRawFD is the raw (encrypted) target of symlink name in dirfd.
func ReadlinkRawFD(dirfd int, name string) (string, error) { return backing.Readlinkat(dirfd, name) }

// ReadSmallFileFD reads regular file name of dirfd, at most limit bytes
// (a sidecar, an ID file).
func ReadSmallFileFD(dirfd int, name string, limit int) ([]byte, error) {
	return backing.ReadFileAt(dirfd, name, limit)
}

// ListRawXattrsFD lists the backing names of the xattrs of fd.
func ListRawXattrsFD(fd int) ([]string, error) { return backing.Flistxattr(fd) }
