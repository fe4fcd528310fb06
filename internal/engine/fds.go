package engine

import (
	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// Directory fds a door keeps itself. The mount caches an fd of each
// directory it serves in its node (opening the backing directory with
// openat2 for every operation measured 10-15% of the daemon's CPU in
// rm -rf) and walks down from the root when it has none; it opens and
// closes them here, beneath CIPHERDIR and never through a symlink
// (internal/backing), and hands them to DirAt for everything else.

// OpenRootFD opens CIPHERDIR for a door that keeps its own fd of it; the
// door closes it (CloseFD).
func (v *Vault) OpenRootFD() (int, error) { return backing.OpenRoot(v.dir) }

// OpenSubdirFD opens the subdirectory backing name of dirfd (no symlink
// followed).
func OpenSubdirFD(dirfd int, backingName string) (int, error) {
	return backing.OpenSubdir(dirfd, backingName)
}

// OpenDirFD opens the directory at relative backing path rel beneath
// dirfd ("." for dirfd itself, as a new fd with a position of its own),
// with no symlink followed and no step outside dirfd.
func OpenDirFD(dirfd int, rel string) (int, error) { return backing.OpenDir(dirfd, rel) }

// CloseFD closes a directory fd opened here.
func CloseFD(fd int) error { return backing.Close(fd) }

// StatFD is the backing stat of an open directory (or file) fd.
func StatFD(fd int) (unix.Stat_t, error) { return backing.Fstat(fd) }

// SyncFD flushes a directory fd (fsyncdir), through the vault's FS, so
// that crash replay and freshness see the barrier like every other.
func (v *Vault) SyncFD(fd int) error { return v.fs.Fsync(fd) }
