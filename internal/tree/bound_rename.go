package tree

import (
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"golang.org/x/sys/unix"
)

// Rebinding on rename and link (design §4). A rename rewrites the
// bindings of the one object renamed, never its children, in this order:
//
//  1. add the binding of the new place in a free slot and make it durable
//     (a directory: its ID file replaced atomically, then the directory
//     fsynced; a file: its header rewritten and fsynced);
//  2. rename the backing entry, then fsync the directory it went to;
//  3. drop the old place's binding (not fsynced: if lost, the object is
//     bound to one place more and valid where it is).
//
// A crash anywhere leaves the object valid at the place where it is: before
// 2 is durable it is at the old place, which is still bound; after, at the
// new one, already bound. Cost: one small write and fsync before the
// rename, one directory fsync and one small write after it. Symlinks,
// fifos and device nodes have nothing to rebind (a symlink's target is
// re-encrypted for its new place, as in v1).

// rebind is step 1 for one object; finish is step 3, or with ok false
// only releases what step 1 holds (the rename failed: the object stays
// bound to both places, valid where it is).
type rebind struct {
	finish func(ok bool) error
}

// noRebind is the rebind of an object with nothing to bind.
var noRebind = rebind{finish: func(bool) error { return nil }}

// beginRebind binds the object at from (backing stat st) to place to as
// well. The object must be bound to from (bind.ErrMisplaced otherwise): a
// rename never launders misplaced contents into a valid place.
func (t *Tree) beginRebind(dirfd int, n Name, st *unix.Stat_t, from, to bind.Place, keepFree int) (rebind, error) {
	switch {
	case t.bind == nil:
		return noRebind, nil
	case isDir(*st):
		return t.beginRebindDir(dirfd, n, st, from, to)
	case st.Mode&unix.S_IFMT == unix.S_IFREG:
		f, release, err := t.openFile(dirfd, n.Backing, from)
		if err != nil {
			return rebind{}, err
		}
		keep, err := keepTimes(dirfd, n.Backing, st)
		if err != nil {
			release()
			return rebind{}, err
		}
		if err := f.AddBinding(to, keepFree); err != nil {
			keep()
			release()
			return rebind{}, err
		}
		return rebind{finish: func(ok bool) error {
			var err error
			if ok {
				err = f.DropBinding(from)
			}
			keep()
			return errors.Join(err, release())
		}}, nil
	}
	return noRebind, nil
}

// keepTimes returns a function that sets the atime and mtime of the
// object at name in dirfd back to those of st, wherever it is by then (it
// holds an O_PATH descriptor of it), and lets the descriptor go. A
// binding is not a change of the contents: rewriting a header or a
// directory's ID file must not move the mtime the mount shows (link,
// rename and unlink keep it, POSIX says). A write by someone else between
// the stat and the reset loses its mtime update: the one race left,
// between a rename or link and a write of the same file.
func keepTimes(dirfd int, name string, st *unix.Stat_t) (func(), error) {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("tree: open %s: %w", name, err)
	}
	return func() {
		// utimensat of the descriptor's /proc link: the object itself,
		// not whatever the name now points at.
		unix.UtimesNanoAt(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), []unix.Timespec{st.Atim, st.Mtim}, 0)
		unix.Close(fd)
	}, nil
}

// beginRebindDir is beginRebind for a directory (backing stat st): its ID
// file gets the new place's binding beside the old one.
func (t *Tree) beginRebindDir(dirfd int, n Name, st *unix.Stat_t, from, to bind.Place) (rebind, error) {
	sub, err := backing.OpenSubdir(dirfd, n.Backing)
	if err != nil {
		return rebind{}, err
	}
	fail := func(err error) (rebind, error) {
		backing.Close(sub)
		return rebind{}, err
	}
	id, epoch, slots, err := t.readDirIDV2(sub)
	if err != nil {
		return fail(err)
	}
	if err := t.checkDir(id, epoch, from, slots); err != nil {
		return fail(fmt.Errorf("tree: directory ID: %w", err))
	}
	keep, err := keepTimes(sub, ".", st)
	if err != nil {
		return fail(err)
	}
	if err := t.replaceDirIDFile(sub, t.dirIDFile(id, epoch, to, &from)); err != nil {
		keep()
		return fail(err)
	}
	// The new binding must be durable before the rename can be.
	if err := t.fs.Fsync(sub); err != nil {
		keep()
		return fail(err)
	}
	return rebind{finish: func(ok bool) error {
		defer backing.Close(sub)
		defer keep()
		if !ok {
			return nil
		}
		return t.replaceDirIDFile(sub, t.dirIDFile(id, epoch, to, nil))
	}}, nil
}

// LinkIn makes newN in newfd (directory ID newID) a hard link to oldN in
// oldfd (directory ID oldID), as Link. With location binding the file
// first gets the new name's binding, durably: in a header slot while one
// stays free for renames (two names), else in the file's links file in the
// root (core/links.go; a write and an fsync of the root per link).
// core.ErrTooManyLinks (EMLINK) beyond bind.MaxLinks names.
func (t *Tree) LinkIn(oldfd int, oldID []byte, oldN Name, newfd int, newID []byte, newN Name) error {
	if t.bind == nil {
		return t.Link(oldfd, oldN, newfd, newN)
	}
	st, err := backing.Fstatat(oldfd, oldN.Backing)
	if err != nil {
		return err
	}
	if isLink(st) {
		return ErrNotPermitted
	}
	rb, err := t.beginRebind(oldfd, oldN, &st, t.Place(oldID, oldN), t.Place(newID, newN), 1)
	if err != nil {
		return err
	}
	// The old name keeps its binding: finish only releases the file.
	defer rb.finish(false)
	return t.link(oldfd, oldN, newfd, newN)
}

// UnlinkIn is UnlinkType for a caller that knows the directory's ID: with
// location binding, removing one of a file's several names also drops that
// name's binding once the unlink is durable (else the binding would stay,
// and the name's place would stay valid for the contents). The last name
// of a file is removed without opening it: its header and links file (if
// it has one: only after a crash left a stale binding) are not touched,
// and a links file left so is fsck's orphan-links.
func (t *Tree) UnlinkIn(dirfd int, dirID []byte, n Name, mode uint32) error {
	if t.bind == nil || mode != 0 && mode != unix.S_IFREG {
		return t.UnlinkType(dirfd, n, mode)
	}
	st, err := backing.Fstatat(dirfd, n.Backing)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
		return t.UnlinkType(dirfd, n, mode)
	}
	p := t.Place(dirID, n)
	f, release, err := t.openFile(dirfd, n.Backing, p)
	if err != nil {
		return err
	}
	defer release()
	keep, err := keepTimes(dirfd, n.Backing, &st)
	if err != nil {
		return err
	}
	defer keep()
	if err := t.UnlinkType(dirfd, n, unix.S_IFREG); err != nil {
		return err
	}
	// The unlink has happened: as in finishRebind, what fails after it
	// leaves a stale binding, not a failed unlink.
	if t.fs.Fsync(dirfd) == nil {
		f.DropBinding(p)
	}
	return nil
}
