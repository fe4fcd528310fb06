package tree

import (
	"bytes"
	"errors"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"golang.org/x/sys/unix"
)

// Rename moves entry oldN of oldfd (directory ID oldID) to newN of newfd
// (directory ID newID). flags is 0, unix.RENAME_NOREPLACE or
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
func (t *Tree) Rename(oldfd int, oldID []byte, oldN Name, newfd int, newID []byte, newN Name, flags uint) error {
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
		return t.exchange(oldfd, oldID, oldN, &ost, newfd, newID, newN, &nst)
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
	created, err := t.WriteSidecar(newfd, newN)
	if err != nil {
		restore()
		return err
	}
	// With location binding: step 1 of bound_rename.go.
	rb, err := t.beginRebind(oldfd, oldN, &ost, t.Place(oldID, oldN), t.Place(newID, newN), 0)
	if err != nil {
		restore()
		if created {
			t.RemoveSidecar(newfd, newN)
		}
		return err
	}
	// The replaced file, if it lives on under other names, loses newN's
	// binding in step 3 (as UnlinkIn's).
	replaced := noRebind
	if newExists {
		replaced = t.beginDropReplaced(newfd, newN, &nst, t.Place(newID, newN))
	}
	if isLink(ost) {
		err = t.moveSymlink(oldfd, oldID, oldN, &ost, newfd, newID, newN, flags)
	} else {
		err = t.fs.Renameat2(oldfd, oldN.Backing, newfd, newN.Backing, flags)
		if err == nil && newExists && isLink(nst) {
			err = t.dropLinkSidecar(newfd, newN.Backing, newfd)
		}
	}
	if err != nil {
		rb.finish(false)
		replaced.finish(false)
		restore()
		if created {
			t.RemoveSidecar(newfd, newN)
		}
		return err
	}
	t.finishRebind([]int{newfd}, rb, replaced)
	return t.removeEntrySidecar(oldfd, oldN, newfd)
}

// beginDropReplaced prepares step 3 for a regular file that a rename
// replaces at place p (newN in newfd, backing stat st) but that lives on
// under other names (link count ≥ 2): once the rename is durable, p's
// binding is dropped from its header or links file, as an unlink of p
// does (UnlinkIn). Without it the replaced contents would stay bound to p,
// and the storage could put their backing file back under p's name and
// have it read (issue 18, L4). The file is opened (and its binding to p
// checked) before the rename, while p still names it. A file that does not
// open at p (not bound to p, a damaged header) has no valid binding to p
// to drop, and does not stop the rename; a drop that fails after the
// rename leaves a stale binding, as a crash between steps 2 and 3 does
// (fsck's stale-binding).
func (t *Tree) beginDropReplaced(newfd int, newN Name, st *unix.Stat_t, p bind.Place) rebind {
	if t.bind == nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
		return noRebind
	}
	f, release, err := t.openFile(newfd, newN.Backing, p)
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

// finishRebind is step 3 of bound_rename.go for the objects of a rename
// between dirfds: the rename is made durable first, then the old bindings
// go. The rename has happened by then, and a rename that returns an error
// must not have taken effect, so nothing here fails it (TestFaultyBacking
// found a failed fsync reported as a failed rename, the file then gone
// from both names in the kernel's cache). A failed fsync leaves the old
// bindings (the rename may not be durable: the object stays valid at
// both places), a failed drop leaves its binding: what a crash between
// steps 2 and 3 leaves, fsck's stale-binding, which --repair drops. A
// failing disk is reported by the next fsync of the file or directory.
func (t *Tree) finishRebind(dirfds []int, rbs ...rebind) {
	if t.bind == nil {
		return
	}
	durable := true
	for _, fd := range dirfds {
		if t.fs.Fsync(fd) != nil {
			durable = false
			break
		}
	}
	for _, rb := range rbs {
		rb.finish(durable)
	}
}

// moveSymlink re-creates symlink oldN (backing stat ost, taken before its
// target is read, which moves its atime) as newN, re-encrypting its target
// for the new directory and name, and removes the old one.
func (t *Tree) moveSymlink(oldfd int, oldID []byte, oldN Name, ost *unix.Stat_t, newfd int, newID []byte, newN Name, flags uint) error {
	target, err := t.Readlink(oldfd, oldID, oldN)
	if err != nil {
		return err
	}
	if err := t.placeSymlink(newfd, newID, newN, target, ost, flags&unix.RENAME_NOREPLACE); err != nil {
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
		return t.dropLinkSidecar(oldfd, oldN.Backing, oldfd)
	}
	return nil
}

// exchange swaps two existing entries (RENAME_EXCHANGE) and re-encrypts the
// symlinks among them for their new places. Both names already have their
// long-name sidecars; ost and nst are their backing stats.
func (t *Tree) exchange(oldfd int, oldID []byte, oldN Name, ost *unix.Stat_t, newfd int, newID []byte, newN Name, nst *unix.Stat_t) error {
	oldLink, newLink := isLink(*ost), isLink(*nst)
	var oldTarget, newTarget string
	var err error
	if oldLink {
		if oldTarget, err = t.Readlink(oldfd, oldID, oldN); err != nil {
			return err
		}
	}
	if newLink {
		if newTarget, err = t.Readlink(newfd, newID, newN); err != nil {
			return err
		}
	}
	oldP, newP := t.Place(oldID, oldN), t.Place(newID, newN)
	rbOld, err := t.beginRebind(oldfd, oldN, ost, oldP, newP, 0)
	if err != nil {
		return err
	}
	rbNew, err := t.beginRebind(newfd, newN, nst, newP, oldP, 0)
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
	t.finishRebind(dirs, rbOld, rbNew)
	// Long-target sidecars are named after the backing name, so they stayed
	// where they were; placeSymlink rewrites or removes them.
	if oldLink {
		if err := t.placeSymlink(newfd, newID, newN, oldTarget, ost, 0); err != nil {
			return err
		}
	} else if newLink {
		t.removeLinkSidecar(newfd, newN.Backing)
	}
	if newLink {
		if err := t.placeSymlink(oldfd, oldID, oldN, newTarget, nst, 0); err != nil {
			return err
		}
	} else if oldLink {
		t.removeLinkSidecar(oldfd, oldN.Backing)
	}
	return nil
}

func isDir(st unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
func isLink(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }
