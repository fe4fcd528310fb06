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

// OutDir is one open directory of an output tree: what the check makes
// in it is made through it, by name.
type OutDir struct {
	o  *Output
	fd int
}

// OpenRoot opens the output tree's top directory (an absolute path); the
// caller's to Close.
func (o *Output) OpenRoot(path string) (*OutDir, error) {
	fd, err := backing.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &OutDir{o: o, fd: fd}, nil
}

// Sub opens subdirectory name of d; the caller's to Close.
func (d *OutDir) Sub(name string) (*OutDir, error) {
	fd, err := backing.OpenSubdir(d.fd, name)
	if err != nil {
		return nil, err
	}
	return &OutDir{o: d.o, fd: fd}, nil
}

// Close closes d.
func (d *OutDir) Close() error { return backing.Close(d.fd) }

// Fd is d's fd as an object (its own attributes: Setxattr, owner, mode,
// times); d keeps it.
func (d *OutDir) Fd() int { return d.fd }

// Mkdir creates directory name of d.
func (d *OutDir) Mkdir(name string, mode uint32) error {
	return d.o.fs.Mkdirat(d.fd, name, mode)
}

// Create creates regular file name of d for writing (EEXIST if the name
// is taken) and returns its fd (the caller's).
func (d *OutDir) Create(name string, mode uint32) (int, error) {
	return d.o.fs.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, mode)
}

// Link makes name of d another link to file old of from (no symlink
// followed).
func (d *OutDir) Link(from *OutDir, old, name string) error {
	return unix.Linkat(from.fd, old, d.fd, name, 0)
}

// Symlink creates symlink name of d to target.
func (d *OutDir) Symlink(target, name string) error {
	return d.o.fs.Symlinkat(target, d.fd, name)
}

// Mknod creates a FIFO, socket or device node name of d.
func (d *OutDir) Mknod(name string, mode uint32, dev uint64) error {
	return d.o.fs.Mknodat(d.fd, name, mode, dev)
}

// Chown sets the owner of name of d (not following a symlink).
func (d *OutDir) Chown(name string, uid, gid int) error {
	return backing.Fchownat(d.fd, name, uid, gid)
}

// Chmod sets the mode bits of name of d.
func (d *OutDir) Chmod(name string, mode uint32) error {
	return backing.Fchmodat(d.fd, name, mode)
}

// SetTimes sets the access and modification times of name of d (not
// following a symlink).
func (d *OutDir) SetTimes(name string, ts [2]unix.Timespec) error {
	return backing.UtimesNanoAt(d.fd, name, ts)
}

// Setxattr sets xattr name of the object open as fd (a file the check
// created, or an OutDir's Fd).
func (o *Output) Setxattr(fd int, name string, value []byte) error {
	return o.fs.Fsetxattr(fd, name, value, 0)
}
