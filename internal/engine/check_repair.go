package engine

import (
	"errors"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// The repairs an offline check makes (fsck --repair). Each goes through
// the vault's backing FS, so that crash replay sees it as it sees every
// other change, and tells freshness the name it repaired, by the ID read
// in its directory (repaired); none changes the times of what it repairs
// (a repair is no change of the user's data).

// Unlink removes name of dirfd (flags: AT_REMOVEDIR).
func (i *Inspector) Unlink(dirfd int, name string, flags int) error {
	err := i.v.fs.Unlinkat(dirfd, name, flags)
	if err == nil {
		i.repaired(dirfd, name)
	}
	return err
}

// repaired tells freshness (if on) that the repair changed name of dirfd,
// by the directory's ID read from its ID file; a directory without a
// readable ID makes it record every directory. The batch records what
// the name is then (a repair leaves no expectation, expect.go: it may
// remove a sidecar or a conflict copy whose entry stays).
func (i *Inspector) repaired(dirfd int, name string) {
	c := i.v.changes
	if c == nil {
		return
	}
	r := tree.ReadDirIDFile(dirfd)
	f, err := tree.ParseDirIDFile(r.Raw)
	if r.Err != nil || err != nil {
		c.all()
		return
	}
	c.touched(f.ID, name)
}

// Sync makes what was done in directory (or file) fd durable.
func (i *Inspector) Sync(fd int) error { return i.v.fs.Fsync(fd) }

// NewDirID writes a new directory ID into directory dirfd, replacing a
// missing or torn one (the caller checked that no entry depends on it).
func (i *Inspector) NewDirID(dirfd int) error {
	// The directory's entry in its parent now records another ID, and
	// neither the parent nor the old ID is known here: freshness records
	// every directory (a torn or missing ID file is rare).
	i.v.changes.all()
	if err := i.v.fs.Unlinkat(dirfd, DirIDFile, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	id, err := i.v.tree.DirIDs().New()
	if err != nil {
		return err
	}
	if err := i.v.fs.WriteFileAt(dirfd, DirIDFile, id, 0o400); err != nil {
		return err
	}
	return i.v.fs.Fsync(dirfd)
}

// RewriteHeader writes the header bytes hdr over the start of file name
// of dirfd and fsyncs it.
func (i *Inspector) RewriteHeader(dirfd int, name string, hdr []byte) error {
	fd, _, err := backing.OpenRegular(dirfd, name, unix.O_WRONLY)
	if err != nil {
		return err
	}
	f := i.v.fs.NewFile(fd, nil)
	defer f.Close()
	if _, err := f.WriteAt(hdr, 0); err != nil {
		return err
	}
	i.repaired(dirfd, name)
	return f.Sync()
}

// RebindDir binds directory name of dirfd ("" for dirfd) to p only,
// dropping the binding of a place it is not at.
func (i *Inspector) RebindDir(dirfd int, name string, p Place) error {
	sub, err := backing.OpenDir(dirfd, name)
	if err != nil {
		return err
	}
	defer backing.Close(sub)
	st, err := backing.Fstat(sub)
	if err != nil {
		return err
	}
	if err := i.v.tree.DirIDs().Rebind(sub, p); err != nil {
		return err
	}
	if p.EncName != "" { // its entry in its parent; the root has none
		b, _ := names.Backing(p.EncName)
		i.v.changes.touched(p.ParentID, b)
	}
	return unix.UtimesNanoAt(sub, ".", []unix.Timespec{st.Atim, st.Mtim}, 0)
}

// RebindFile binds file name of dirfd, found at p, to p and also only
// (the places of its other names), dropping every other binding.
func (i *Inspector) RebindFile(dirfd int, name string, p Place, also []Place) error {
	fd, st, err := backing.OpenRegular(dirfd, name, unix.O_RDWR)
	if err != nil {
		return err
	}
	bf := i.v.fs.NewFile(fd, nil)
	defer bf.Close()
	cf, err := i.v.core.OpenAt(bf, p)
	if err != nil {
		return err
	}
	err = cf.DropBindingsExcept(append([]Place{p}, also...)...)
	if cerr := cf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	i.repaired(dirfd, name)
	return backing.UtimesNanoAt(dirfd, name, [2]unix.Timespec{st.Atim, st.Mtim})
}

// Reroot recomputes the tag blocks and root of file name of dirfd, found
// at p, from its chunks read with v1's rules (a chunk that does not
// authenticate stops it).
func (i *Inspector) Reroot(dirfd int, name string, p Place) error {
	fd, st, err := backing.OpenRegular(dirfd, name, unix.O_RDWR)
	if err != nil {
		return err
	}
	bf := i.v.fs.NewFile(fd, nil)
	defer bf.Close()
	if err := i.v.core.Reroot(bf, p); err != nil {
		return err
	}
	i.repaired(dirfd, name)
	return backing.UtimesNanoAt(dirfd, name, [2]unix.Timespec{st.Atim, st.Mtim})
}
