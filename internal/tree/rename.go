package tree

import (
	"bytes"
	"errors"

	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// Rename moves entry oldN of directory od to newN of directory nd (both
// Dirs with their IDs). flags is 0, unix.RENAME_NOREPLACE or
// unix.RENAME_EXCHANGE, with rename(2) semantics (ErrExists for
// RENAME_NOREPLACE onto an existing name, ErrNotFound for RENAME_EXCHANGE
// with a missing one):
//   - a directory may replace only an empty directory (ErrNotEmpty), a
//     non-directory only a non-directory (ErrIsDir, ErrNotDir); the
//     replaced one's dirid is removed first and put back if the rename fails;
//   - long-name sidecars are created for the new name and removed for the old;
//   - a symlink's target is bound to its directory and name, so a moved
//     symlink is re-encrypted: a new symlink is made under a temporary name
//     and renamed into place, then the old one is removed. The new link
//     keeps the old one's owner, atime and mtime (keepLinkAttrs), but not
//     its backing inode number.
func (t *Tree) Rename(od Dir, oldN Name, nd Dir, newN Name, flags uint) error {
	oldfd, oldID, newfd, newID := od.fd, od.id, nd.fd, nd.id
	if bytes.Equal(oldID, newID) && oldN.Backing == newN.Backing {
		if _, err := backing.Fstatat(oldfd, oldN.Backing); err != nil {
			return err
		}
		return nil
	}
	ost, err := backing.Fstatat(oldfd, oldN.Backing)
	if err != nil {
		return err
	}
	nst, nerr := backing.Fstatat(newfd, newN.Backing)
	if nerr != nil && !errors.Is(nerr, unix.ENOENT) {
		return nerr
	}
	newExists := nerr == nil
	if flags&unix.RENAME_EXCHANGE != 0 {
		if !newExists {
			return ErrNotFound
		}
		if ost.Ino == nst.Ino && ost.Dev == nst.Dev && !isDir(ost) {
			// Two hard links of one file: the swap changes nothing
			// (renameat2 leaves both names as they are), so nothing is
			// rebound either: each name keeps its binding.
			return t.fs.Renameat2(oldfd, oldN.Backing, newfd, newN.Backing, unix.RENAME_EXCHANGE)
		}
		return t.exchange(od, oldN, &ost, nd, newN, &nst)
	}
	if newExists {
		if flags&unix.RENAME_NOREPLACE != 0 {
			return ErrExists
		}
		if ost.Ino == nst.Ino && ost.Dev == nst.Dev {
			// Two hard links of one file: rename(2) does nothing.
			return nil
		}
		if isDir(nst) && !isDir(ost) {
			return ErrIsDir
		}
		if !isDir(nst) && isDir(ost) {
			return ErrNotDir
		}
	}
	restore := func() {}
	if newExists && isDir(nst) {
		if restore, err = t.emptyDir(newfd, newN.Backing); err != nil {
			return err
		}
	}
	created, err := t.writeSidecar(newfd, newN)
	if err != nil {
		restore()
		return err
	}
	// With location binding: step 1 of bound_rename.go.
	rb, err := t.rb.begin(oldfd, oldN, &ost, t.Place(oldID, oldN), t.Place(newID, newN), 0)
	if err != nil {
		restore()
		if created {
			t.removeSidecar(newfd, newN)
		}
		return err
	}
	// The replaced file, if it lives on under other names, loses newN's
	// binding in step 3 (as Unlink's).
	replaced := noRebind
	if newExists {
		replaced = t.rb.beginDropReplaced(newfd, newN, &nst, t.Place(newID, newN))
	}
	if isLink(ost) {
		err = t.moveSymlink(od, oldN, &ost, nd, newN, flags)
	} else {
		err = t.fs.Renameat2(oldfd, oldN.Backing, newfd, newN.Backing, flags)
		if err == nil && newExists && isLink(nst) {
			err = t.links.dropSidecar(newfd, newN.Backing, newfd)
		}
	}
	if err != nil {
		rb.finish(false)
		replaced.finish(false)
		restore()
		if created {
			t.removeSidecar(newfd, newN)
		}
		return err
	}
	t.rb.finishAll([]int{newfd}, rb, replaced)
	return t.removeEntrySidecar(oldfd, oldN, newfd)
}

// moveSymlink re-creates symlink oldN (backing stat ost, taken before its
// target is read, which moves its atime) as newN, re-encrypting its target
// for the new directory and name, and removes the old one.
func (t *Tree) moveSymlink(od Dir, oldN Name, ost *unix.Stat_t, nd Dir, newN Name, flags uint) error {
	oldfd, newfd := od.fd, nd.fd
	target, err := t.links.Readlink(od, oldN)
	if err != nil {
		return err
	}
	if err := t.links.place(nd, newN, target, ost, flags&unix.RENAME_NOREPLACE); err != nil {
		return err
	}
	// The new link must be durable before the old one goes: else a
	// crash could keep the unlink and lose the new link, and the symlink
	// would be gone under both names (found by internal/crashsim's
	// replay, "renames": a symlink moved to another directory). One
	// directory fsync per symlink rename.
	if err := t.fs.Fsync(newfd); err != nil {
		return err
	}
	if err := t.fs.Unlinkat(oldfd, oldN.Backing, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	if ost.Size == int64(len(longTargetMarker)) {
		return t.links.dropSidecar(oldfd, oldN.Backing, oldfd)
	}
	return nil
}

// exchange swaps two existing entries (RENAME_EXCHANGE) and re-encrypts the
// symlinks among them for their new places. Both names already have their
// long-name sidecars; ost and nst are their backing stats.
func (t *Tree) exchange(od Dir, oldN Name, ost *unix.Stat_t, nd Dir, newN Name, nst *unix.Stat_t) error {
	oldfd, oldID, newfd, newID := od.fd, od.id, nd.fd, nd.id
	oldLink, newLink := isLink(*ost), isLink(*nst)
	var oldTarget, newTarget string
	var err error
	if oldLink {
		if oldTarget, err = t.links.Readlink(od, oldN); err != nil {
			return err
		}
	}
	if newLink {
		if newTarget, err = t.links.Readlink(nd, newN); err != nil {
			return err
		}
	}
	oldP, newP := t.Place(oldID, oldN), t.Place(newID, newN)
	rbOld, err := t.rb.begin(oldfd, oldN, ost, oldP, newP, 0)
	if err != nil {
		return err
	}
	rbNew, err := t.rb.begin(newfd, newN, nst, newP, oldP, 0)
	if err != nil {
		rbOld.finish(false)
		return err
	}
	if err := t.fs.Renameat2(oldfd, oldN.Backing, newfd, newN.Backing, unix.RENAME_EXCHANGE); err != nil {
		rbOld.finish(false)
		rbNew.finish(false)
		return err
	}
	dirs := []int{newfd}
	if oldfd != newfd {
		dirs = append(dirs, oldfd)
	}
	t.rb.finishAll(dirs, rbOld, rbNew)
	// Long-target sidecars are named after the backing name, so they stayed
	// where they were; placeSymlink rewrites or removes them.
	if oldLink {
		if err := t.links.place(nd, newN, oldTarget, ost, 0); err != nil {
			return err
		}
	} else if newLink {
		t.links.removeSidecar(newfd, newN.Backing)
	}
	if newLink {
		if err := t.links.place(od, oldN, newTarget, nst, 0); err != nil {
			return err
		}
	} else if oldLink {
		t.links.removeSidecar(oldfd, oldN.Backing)
	}
	return nil
}

func isDir(st unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
func isLink(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }
