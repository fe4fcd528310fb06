package tree

import (
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// Mkdir creates directory n in dirfd with mode (permission bits plus
// setgid/sticky) and a fresh ID, and returns the ID. The directory is
// created 0700 so that the ID can be written into it whatever the final mode
// is, then chmod'ed: a mode such as 0151 comes out exactly.
func (t *Tree) Mkdir(dirfd int, n Name, mode uint32) ([]byte, error) {
	if t.bind != nil {
		return nil, errNoPlace
	}
	return t.MkdirIn(dirfd, nil, n, mode)
}

// MkdirIn is Mkdir for a caller that knows the parent's ID, parentID: with
// location binding the new directory's ID file binds it to its place.
func (t *Tree) MkdirIn(dirfd int, parentID []byte, n Name, mode uint32) ([]byte, error) {
	id, err := t.NewDirID()
	if err != nil {
		return nil, err
	}
	created, err := t.WriteSidecar(dirfd, n)
	if err != nil {
		return nil, err
	}
	undo := func() {
		if created {
			t.RemoveSidecar(dirfd, n)
		}
	}
	if err := t.fs.Mkdirat(dirfd, n.Backing, 0o700); err != nil {
		undo()
		return nil, err
	}
	err = func() error {
		sub, err := backing.OpenSubdir(dirfd, n.Backing)
		if err != nil {
			return err
		}
		defer backing.Close(sub)
		if err := t.writeDirID(sub, id, t.Place(parentID, n)); err != nil {
			return err
		}
		// In a set-group-ID directory the new directory inherits S_ISGID
		// (the kernel set it on the backing mkdir); keep it.
		if st, err := backing.Fstat(sub); err == nil {
			mode |= st.Mode & unix.S_ISGID
		}
		// The dirid entry must be durable before the directory is used.
		return t.fs.Fsync(sub)
	}()
	if err == nil {
		err = backing.Fchmodat(dirfd, n.Backing, mode&0o7777)
	}
	if err == nil {
		// Writing the dirid moved mtime and the chmod ctime; make all
		// three times one instant, as for a plain mkdir.
		now := unix.Timespec{Nsec: unix.UTIME_NOW}
		err = backing.UtimesNanoAt(dirfd, n.Backing, [2]unix.Timespec{now, now})
	}
	if err != nil {
		if sub, oerr := backing.OpenSubdir(dirfd, n.Backing); oerr == nil {
			t.fs.Unlinkat(sub, names.DirIDFile, 0)
			backing.Close(sub)
		}
		t.fs.Unlinkat(dirfd, n.Backing, unix.AT_REMOVEDIR)
		undo()
		return nil, fmt.Errorf("tree: mkdir: %w", err)
	}
	return id, nil
}

// Rmdir removes the empty directory n from dirfd: its encryptfs.dirid, then
// the directory, then its long-name sidecar. ErrNotEmpty if anything but
// the dirid remains (even a foreign file: never delete what we cannot show).
func (t *Tree) Rmdir(dirfd int, n Name) error {
	restore, err := t.emptyDir(dirfd, n.Backing)
	if err != nil {
		return err
	}
	if err := t.fs.Unlinkat(dirfd, n.Backing, unix.AT_REMOVEDIR); err != nil {
		restore()
		return err
	}
	return t.removeEntrySidecar(dirfd, n, dirfd)
}

// emptyDir checks that backing directory name in dirfd holds nothing but its
// dirid and removes the dirid. restore puts the dirid back (for when the
// following rmdir or rename fails).
func (t *Tree) emptyDir(dirfd int, name string) (restore func(), err error) {
	sub, err := backing.OpenSubdir(dirfd, name)
	if err != nil {
		return nil, err
	}
	defer backing.Close(sub)
	ents, err := backing.ReadDir(sub)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if e.Name != names.DirIDFile {
			return nil, ErrNotEmpty
		}
	}
	id, err := backing.ReadFileAt(sub, names.DirIDFile, t.dirIDFileSize())
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, err
	}
	if err == nil {
		// The unlinks that emptied the directory must be durable before
		// its ID goes: a crash that kept the dirid's removal and lost one
		// of theirs would leave a name no ID decrypts any more (found by
		// internal/crashsim's replay, "untar": rm of a file, then rmdir).
		// What a crash can leave now is an empty directory without an ID,
		// which fsck --repair gives a new one. One fsync per rmdir and
		// per rename over a directory.
		if err := t.fs.Fsync(sub); err != nil {
			return nil, err
		}
		if err := t.fs.Unlinkat(sub, names.DirIDFile, 0); err != nil {
			return nil, err
		}
	}
	restore = func() {
		if id == nil {
			return
		}
		if s, err := backing.OpenSubdir(dirfd, name); err == nil {
			t.fs.WriteFileAt(s, names.DirIDFile, id, 0o400) // the ID file as it was
			backing.Close(s)
		}
	}
	return restore, nil
}

// Unlink removes the non-directory entry n from dirfd with its long-name
// sidecar and, for a symlink with a long target, the target's sidecar.
func (t *Tree) Unlink(dirfd int, n Name) error { return t.UnlinkType(dirfd, n, 0) }

// UnlinkType is Unlink for a caller that knows the entry's file type
// (mode's unix.S_IFMT bits; 0 if unknown): a known non-symlink saves the
// readlink that finds a symlink's long-target sidecar.
func (t *Tree) UnlinkType(dirfd int, n Name, mode uint32) error {
	longTarget := false
	if mode == 0 || mode == unix.S_IFLNK {
		target, err := backing.Readlinkat(dirfd, n.Backing)
		longTarget = err == nil && target == longTargetMarker
	}
	if err := t.fs.Unlinkat(dirfd, n.Backing, 0); err != nil {
		return err
	}
	if longTarget {
		// The unlink must be durable before the target's sidecar goes
		// (see dropLinkSidecar).
		if err := t.fs.Fsync(dirfd); err != nil {
			return err
		}
		t.removeLinkSidecar(dirfd, n.Backing)
	}
	return t.removeEntrySidecar(dirfd, n, dirfd)
}

// Create creates and opens regular file n in dirfd exclusively, read-write
// (the engine reads back partial chunks even for write-only opens).
// flags may add O_TRUNC-free extras such as O_DIRECT; O_APPEND and
// O_WRONLY are dropped because the engine computes every offset itself.
func (t *Tree) Create(dirfd int, n Name, flags int, mode uint32) (int, error) {
	created, err := t.WriteSidecar(dirfd, n)
	if err != nil {
		return -1, err
	}
	flags &^= unix.O_APPEND | unix.O_WRONLY | unix.O_RDONLY | unix.O_TRUNC | unix.O_CREAT | unix.O_EXCL
	fd, err := t.fs.Openat(dirfd, n.Backing, flags|unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, mode&0o7777)
	if err != nil {
		if created {
			t.RemoveSidecar(dirfd, n)
		}
		return -1, err
	}
	return fd, nil
}

// Mknod creates a fifo, socket or device node n in dirfd.
func (t *Tree) Mknod(dirfd int, n Name, mode uint32, dev uint64) error {
	created, err := t.WriteSidecar(dirfd, n)
	if err != nil {
		return err
	}
	if err := t.fs.Mknodat(dirfd, n.Backing, mode, dev); err != nil {
		if created {
			t.RemoveSidecar(dirfd, n)
		}
		return err
	}
	return nil
}

// Link makes newN in newfd a hard link to oldN in oldfd. Symlinks cannot be
// hard-linked (ErrNotPermitted): their encrypted target is bound to one
// name.
func (t *Tree) Link(oldfd int, oldN Name, newfd int, newN Name) error {
	st, err := backing.Fstatat(oldfd, oldN.Backing)
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return ErrNotPermitted
	}
	if t.bind != nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		return errNoPlace // LinkIn
	}
	return t.link(oldfd, oldN, newfd, newN)
}

// link makes the sidecar and the backing hard link of Link.
func (t *Tree) link(oldfd int, oldN Name, newfd int, newN Name) error {
	created, err := t.WriteSidecar(newfd, newN)
	if err != nil {
		return err
	}
	if err := t.fs.Linkat(oldfd, oldN.Backing, newfd, newN.Backing); err != nil {
		if created {
			t.RemoveSidecar(newfd, newN)
		}
		return err
	}
	return nil
}

// tempName returns a fresh name in the reserved namespace for an entry that
// is about to be renamed over its final name.
func (t *Tree) tempName() (string, error) {
	var b [12]byte
	if _, err := io.ReadFull(t.rand, b[:]); err != nil {
		return "", err
	}
	return names.TempName(b[:]), nil
}
