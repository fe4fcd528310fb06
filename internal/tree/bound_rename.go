package tree

import (
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/fileengine"
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

// rebinder is the part of a Tree that owns the rule above: an object
// renamed or linked is bound to its new place, durably, before its entry
// moves, and loses its old binding only once the move is durable. It
// rewrites directory ID files (DirIDs) and file headers (through files,
// the door's open-file table, or opened here). It is the rebinding of a
// bound vault (rebinding.go); an unbound one has nothing to rebind.
type rebinder struct {
	fs    *backing.FS
	bind  *Binding
	files FileSource
	ids   *DirIDs
}

// rebind is step 1 for one object; finish is step 3, or with ok false
// only releases what step 1 holds (the rename failed: the object stays
// bound to both places, valid where it is).
type rebind struct {
	finish func(ok bool) error
}

// noRebind is the rebind of an object with nothing to bind.
var noRebind = rebind{finish: func(bool) error { return nil }}

// begin binds the object at from (backing stat st) to place to as
// well. The object must be bound to from (bind.ErrMisplaced otherwise): a
// rename never launders misplaced contents into a valid place.
func (r *rebinder) begin(dirfd int, n Name, st *unix.Stat_t, from, to bind.Place, keepFree int) (rebind, error) {
	switch {
	case isDir(*st):
		return r.beginDir(dirfd, n, st, from, to)
	case st.Mode&unix.S_IFMT == unix.S_IFREG:
		f, release, err := r.openFile(dirfd, n.Backing, from)
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

// beginDir is begin for a directory (backing stat st): its ID
// file gets the new place's binding beside the old one.
func (r *rebinder) beginDir(dirfd int, n Name, st *unix.Stat_t, from, to bind.Place) (rebind, error) {
	sub, err := backing.OpenSubdir(dirfd, n.Backing)
	if err != nil {
		return rebind{}, err
	}
	fail := func(err error) (rebind, error) {
		backing.Close(sub)
		return rebind{}, err
	}
	id, epoch, slots, err := r.ids.readV2(sub)
	if err != nil {
		return fail(err)
	}
	if err := r.ids.ep.check(id, epoch, from, slots); err != nil {
		return fail(fmt.Errorf("tree: directory ID: %w", err))
	}
	keep, err := keepTimes(sub, ".", st)
	if err != nil {
		return fail(err)
	}
	if err := r.ids.replaceFile(sub, r.ids.lay.file(id, epoch, to, &from)); err != nil {
		keep()
		return fail(err)
	}
	// The new binding must be durable before the rename can be.
	if err := r.fs.Fsync(sub); err != nil {
		keep()
		return fail(err)
	}
	return rebind{finish: func(ok bool) error {
		defer backing.Close(sub)
		defer keep()
		if !ok {
			return nil
		}
		return r.ids.replaceFile(sub, r.ids.lay.file(id, epoch, to, nil))
	}}, nil
}

// beginDropReplaced prepares step 3 for a regular file that a rename
// replaces at place p (newN in newfd, backing stat st) but that lives on
// under other names (link count ≥ 2): once the rename is durable, p's
// binding is dropped from its header or links file, as an unlink of p
// does (Tree.Unlink). Without it the replaced contents would stay bound to p,
// and the storage could put their backing file back under p's name and
// have it read (issue 18, L4). The file is opened (and its binding to p
// checked) before the rename, while p still names it. A file that does not
// open at p (not bound to p, a damaged header) has no valid binding to p
// to drop, and does not stop the rename; a drop that fails after the
// rename leaves a stale binding, as a crash between steps 2 and 3 does
// (fsck's stale-binding).
func (r *rebinder) beginDropReplaced(newfd int, newN Name, st *unix.Stat_t, p bind.Place) rebind {
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
		return noRebind
	}
	f, release, err := r.openFile(newfd, newN.Backing, p)
	if err != nil {
		return noRebind
	}
	keep, err := keepTimes(newfd, newN.Backing, st)
	if err != nil {
		release()
		return noRebind
	}
	return rebind{finish: func(ok bool) error {
		var err error
		if ok {
			err = f.DropBinding(p)
		}
		keep()
		return errors.Join(err, release())
	}}
}

// finishAll is step 3 of bound_rename.go for the objects of a rename
// between dirfds: the rename is made durable first, then the old bindings
// go. The rename has happened by then, and a rename that returns an error
// must not have taken effect, so nothing here fails it (TestFaultyBacking
// found a failed fsync reported as a failed rename, the file then gone
// from both names in the kernel's cache). A failed fsync leaves the old
// bindings (the rename may not be durable: the object stays valid at
// both places), a failed drop leaves its binding: what a crash between
// steps 2 and 3 leaves, fsck's stale-binding, which --repair drops. A
// failing disk is reported by the next fsync of the file or directory.
func (r *rebinder) finishAll(dirfds []int, rbs ...rebind) {
	durable := true
	for _, fd := range dirfds {
		if r.fs.Fsync(fd) != nil {
			durable = false
			break
		}
	}
	for _, rb := range rbs {
		rb.finish(durable)
	}
}

// openFile returns the File of regular file backingName in dirfd found at
// p, through the FileSource or, without one, opened here.
func (r *rebinder) openFile(dirfd int, backingName string, p bind.Place) (*fileengine.File, func() error, error) {
	if r.files != nil {
		return r.files(dirfd, backingName, p)
	}
	fd, _, err := backing.OpenRegular(dirfd, backingName, unix.O_RDWR)
	if err != nil {
		return nil, nil, err
	}
	bf := r.fs.NewFile(fd, nil)
	f, err := r.bind.Engine.OpenAt(bf, p)
	if err != nil {
		bf.Close()
		return nil, nil, err
	}
	return f, func() error { return errors.Join(f.Close(), bf.Close()) }, nil
}
