package tree

import (
	"path"
	"slices"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// The one walk of CIPHERDIR's directory tree: fsck's check (and the
// repair plan it makes), fsck's prescan, the content upgrade's scans and
// freshness's full batch all walk through Walk, so that they agree on
// what a directory's entries are (IsEntryName), read each directory's ID
// file once (ReadDirIDFile, checked by whoever needs it: DirIDs.Of,
// DirIDs.OfUnchecked, ParseDirIDFile), and reach every directory the same
// way: opened beneath its parent through internal/backing, no symlink
// followed (a symlink is an entry, never descended into).

// WalkDir is one directory of CIPHERDIR as Walk visits it.
type WalkDir struct {
	// Fd is the directory, open beneath CIPHERDIR's root; valid until
	// Leave returns.
	Fd int
	// Rel is its backing path from the root ("." for the root).
	Rel string
	// Ents are all of its names but "." and "..", non-entries too (sorted
	// by name with Walker.Sorted), or ListErr why it could not be listed.
	Ents    []backing.Dirent
	ListErr error
	// ID is its encryptfs.dirid, read once.
	ID DirIDRead
	// Data is the caller's: the root's (Walk's root), or what the
	// Entry that descended into it returned.
	Data any
}

// Walker says what Walk does with each directory and name.
type Walker struct {
	// Sorted lists each directory's names sorted (fsck reports in that
	// order); otherwise in the order the kernel gives them.
	Sorted bool
	// Enter is called for each directory once it is open, listed and its
	// ID file read, before its names (pre-order). enter false leaves its
	// names unvisited (and Leave uncalled); an error stops the walk.
	Enter func(d *WalkDir) (enter bool, err error)
	// Other is called for each name of d that is no entry (its ID file
	// and their conflict copies, sidecars, temporaries, the config ...),
	// in the listing's order among the entries; nil: they are skipped.
	Other func(d *WalkDir, name string) error
	// Entry is called for each entry of d (IsEntryName), with its lstat
	// or statErr. descend (for a directory) asks the walk to go into it,
	// with data as its WalkDir.Data.
	Entry func(d *WalkDir, name string, st unix.Stat_t, statErr error) (descend bool, data any, err error)
	// OpenFailed is called when a directory to descend into cannot be
	// opened (data: what Entry returned for it); nil: it is skipped.
	OpenFailed func(d *WalkDir, name string, data any, err error) error
	// Leave is called after d's names and everything below them
	// (post-order), also when the walk stops below d (the stop's error
	// is Walk's), so that what Enter set up is released.
	Leave func(d *WalkDir) error
}

// Walk walks the directory tree beneath rootfd (CIPHERDIR's root; not
// closed) with w, root as the root's WalkDir.Data. It returns the error
// that stopped it.
func Walk(rootfd int, root any, w Walker) error {
	return w.dir(&WalkDir{Fd: rootfd, Rel: ".", Data: root})
}

// dir visits d (open) and what is below it.
func (w *Walker) dir(d *WalkDir) error {
	d.ID = ReadDirIDFile(d.Fd)
	d.Ents, d.ListErr = backing.ReadDir(d.Fd)
	if w.Sorted {
		slices.SortFunc(d.Ents, func(a, b backing.Dirent) int { return strings.Compare(a.Name, b.Name) })
	}
	if w.Enter != nil {
		if enter, err := w.Enter(d); err != nil || !enter {
			return err
		}
	}
	err := w.names(d)
	if w.Leave != nil {
		if lerr := w.Leave(d); err == nil {
			err = lerr
		}
	}
	return err
}

// names visits d's names in order.
func (w *Walker) names(d *WalkDir) error {
	for _, e := range d.Ents {
		if !IsEntryName(e.Name) {
			if w.Other != nil {
				if err := w.Other(d, e.Name); err != nil {
					return err
				}
			}
			continue
		}
		if w.Entry == nil {
			continue
		}
		st, serr := backing.Fstatat(d.Fd, e.Name)
		descend, data, err := w.Entry(d, e.Name, st, serr)
		if err != nil {
			return err
		}
		if !descend || serr != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		if err := w.sub(d, e.Name, data); err != nil {
			return err
		}
	}
	return nil
}

// sub opens directory name of d and visits it.
func (w *Walker) sub(d *WalkDir, name string, data any) error {
	fd, err := backing.OpenSubdir(d.Fd, name)
	if err != nil {
		if w.OpenFailed != nil {
			return w.OpenFailed(d, name, data, err)
		}
		return nil
	}
	defer backing.Close(fd)
	return w.dir(&WalkDir{Fd: fd, Rel: path.Join(d.Rel, name), Data: data})
}

// ListOf is List of a directory the walk visits (d, its ID dirID, its
// place found by place): its listing is the walk's, not read again.
func (t *Tree) ListOf(d *WalkDir, dirID []byte, place DirPlace) ([]Entry, []BadEntry) {
	return t.listOf(NewDir(d.Fd, dirID, place), d.Ents)
}
