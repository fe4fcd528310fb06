package tree

import (
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// Mkdir creates directory n in d with mode (permission bits plus
// setgid/sticky) and a fresh ID, and returns the ID. The directory is
// created 0700 so that the ID can be written into it whatever the final mode
// is, then chmod'ed: a mode such as 0151 comes out exactly. With location
// binding the new directory's ID file binds it to its place, which needs
// d's ID (errNoPlace without it).
func (t *Tree) Mkdir(d Dir, n Name, mode uint32) ([]byte, error) {
	if err := t.rb.needPlace(d); err != nil {
		return nil, err
	}
	dirfd := d.fd
	id, err := t.ids.New()
	if err != nil {
		return nil, err
	}
	created, err := t.writeSidecar(dirfd, n)
	if err != nil {
		return nil, err
	}
	undo := func() {
		if created {
			t.removeSidecar(dirfd, n)
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
		if err := t.ids.write(sub, id, t.Place(d.id, n)); err != nil {
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

// Rmdir removes the empty directory n from d: its encryptfs.dirid, then
// the directory, then its long-name sidecar. ErrNotEmpty if anything but
// the dirid remains (even a foreign file: never delete what we cannot show).
func (t *Tree) Rmdir(d Dir, n Name) error {
	dirfd := d.fd
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
	id, err := backing.ReadFileAt(sub, names.DirIDFile, t.ids.lay.size())
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

// Unlink removes the non-directory entry n from d with its long-name
// sidecar and, for a symlink with a long target, the target's sidecar.
// mode is the entry's file type if the caller knows it (mode's unix.S_IFMT
// bits; 0 if unknown): a known non-symlink saves the readlink that finds
// a symlink's long-target sidecar. With location binding and d's ID,
// removing one of a file's several names also drops that name's binding
// once the unlink is durable (else the binding would stay, and the name's
// place would stay valid for the contents). The last name of a file is
// removed without opening it: its header and links file (if it has one:
// only after a crash left a stale binding) are not touched, and a links
// file left so is fsck's orphan-links.
func (t *Tree) Unlink(d Dir, n Name, mode uint32) error {
	return t.rb.unlink(d, n, mode, false, func(mode uint32) error { return t.unlink(d.fd, n, mode) })
}

// UnlinkSole is Unlink of regular file n of d that the caller knows to
// have no other name (a link count of 1 it saw, in a CIPHERDIR no one
// else changes): with location binding, no binding of the file outlives
// n, so the link count is not asked again (rebinder.unlink's fstatat,
// one per file of rm -rf). A caller that is wrong leaves what a crash
// between an unlink and its binding's drop leaves: a stale binding of a
// file with other names, which fsck reports and --repair drops.
func (t *Tree) UnlinkSole(d Dir, n Name) error {
	return t.rb.unlink(d, n, unix.S_IFREG, true, func(mode uint32) error { return t.unlink(d.fd, n, mode) })
}

// unlink is Unlink without the binding: the entry, then its sidecars.
func (t *Tree) unlink(dirfd int, n Name, mode uint32) error {
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
		t.links.removeSidecar(dirfd, n.Backing)
	}
	return t.removeEntrySidecar(dirfd, n, dirfd)
}

// Create creates and opens regular file n in d exclusively, read-write
// (the engine reads back partial chunks even for write-only opens).
// flags may add O_TRUNC-free extras such as O_DIRECT; O_APPEND and
// O_WRONLY are dropped because the engine computes every offset itself.
func (t *Tree) Create(d Dir, n Name, flags int, mode uint32) (int, error) {
	dirfd := d.fd
	created, err := t.writeSidecar(dirfd, n)
	if err != nil {
		return -1, err
	}
	flags &^= unix.O_APPEND | unix.O_WRONLY | unix.O_RDONLY | unix.O_TRUNC | unix.O_CREAT | unix.O_EXCL
	fd, err := t.fs.Openat(dirfd, n.Backing, flags|unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, mode&0o7777)
	if err != nil {
		if created {
			t.removeSidecar(dirfd, n)
		}
		return -1, err
	}
	return fd, nil
}

// Mknod creates a fifo, socket or device node n in d.
func (t *Tree) Mknod(d Dir, n Name, mode uint32, dev uint64) error {
	dirfd := d.fd
	created, err := t.writeSidecar(dirfd, n)
	if err != nil {
		return err
	}
	if err := t.fs.Mknodat(dirfd, n.Backing, mode, dev); err != nil {
		if created {
			t.removeSidecar(dirfd, n)
		}
		return err
	}
	return nil
}

// Link makes newN in directory nd a hard link to oldN in directory od.
// Symlinks cannot be hard-linked (ErrNotPermitted): their encrypted target
// is bound to one name. With location binding the file first gets the new
// name's binding, durably: in a header slot while one stays free for
// renames (two names), else in the file's links file in the root
// (fileengine/links.go; a write and an fsync of the root per link).
// fileengine.ErrTooManyLinks (EMLINK) beyond bind.MaxLinks names. That needs
// od's ID: without it a regular file is not linked (errNoPlace).
func (t *Tree) Link(od Dir, oldN Name, nd Dir, newN Name) error {
	st, err := backing.Fstatat(od.fd, oldN.Backing)
	if err != nil {
		return err
	}
	if isLink(st) {
		return ErrNotPermitted
	}
	return t.rb.link(od, oldN, &st, nd, newN, func() error { return t.link(od.fd, oldN, nd.fd, newN) })
}

// link makes the sidecar and the backing hard link of Link.
func (t *Tree) link(oldfd int, oldN Name, newfd int, newN Name) error {
	created, err := t.writeSidecar(newfd, newN)
	if err != nil {
		return err
	}
	if err := t.fs.Linkat(oldfd, oldN.Backing, newfd, newN.Backing); err != nil {
		if created {
			t.removeSidecar(newfd, newN)
		}
		return err
	}
	return nil
}
