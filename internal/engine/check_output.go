package engine

import (
	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// Output is a tree an offline check writes outside CIPHERDIR (fsck's
// salvage copy): it goes through internal/backing like CIPHERDIR does
// (directory fds, no symlink followed), but through an FS that reports to
// nobody, because crash replay and freshness follow the vault only.
type Output struct{ fs *backing.FS }

// NewOutput returns the writer of an output tree.
func NewOutput() *Output { return &Output{} }

// OpenRoot opens the output tree's top directory (an absolute path).
func (o *Output) OpenRoot(path string) (int, error) { return backing.OpenRoot(path) }

// OpenSubdir opens subdirectory name of dirfd.
func (o *Output) OpenSubdir(dirfd int, name string) (int, error) {
	return backing.OpenSubdir(dirfd, name)
}

// Close closes an fd opened here.
func (o *Output) Close(fd int) error { return backing.Close(fd) }

// Mkdir creates directory name of dirfd.
func (o *Output) Mkdir(dirfd int, name string, mode uint32) error {
	return o.fs.Mkdirat(dirfd, name, mode)
}

// Create creates regular file name of dirfd for writing (EEXIST if the
// name is taken) and returns its fd.
func (o *Output) Create(dirfd int, name string, mode uint32) (int, error) {
	return o.fs.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, mode)
}

// Symlink creates symlink name of dirfd to target.
func (o *Output) Symlink(target string, dirfd int, name string) error {
	return o.fs.Symlinkat(target, dirfd, name)
}

// Mknod creates a FIFO, socket or device node name of dirfd.
func (o *Output) Mknod(dirfd int, name string, mode uint32, dev uint64) error {
	return o.fs.Mknodat(dirfd, name, mode, dev)
}

// Setxattr sets xattr name of fd.
func (o *Output) Setxattr(fd int, name string, value []byte) error {
	return o.fs.Fsetxattr(fd, name, value, 0)
}

// Chown sets the owner of name of dirfd (not following a symlink).
func (o *Output) Chown(dirfd int, name string, uid, gid int) error {
	return backing.Fchownat(dirfd, name, uid, gid)
}

// Chmod sets the mode bits of name of dirfd.
func (o *Output) Chmod(dirfd int, name string, mode uint32) error {
	return backing.Fchmodat(dirfd, name, mode)
}

// SetTimes sets the access and modification times of name of dirfd (not
// following a symlink).
func (o *Output) SetTimes(dirfd int, name string, ts [2]unix.Timespec) error {
	return backing.UtimesNanoAt(dirfd, name, ts)
}
