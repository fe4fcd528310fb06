package engine

import (
	"errors"

	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// The repairs an offline check makes (fsck --repair). Each goes through
// the vault's backing FS, so that crash replay sees it as it sees every
// other change, and tells freshness to record every directory at its next
// batch (a repair knows fds, not directory IDs); none changes the times of what it repairs
// (a repair is no change of the user's data).

// Unlink removes name of dirfd (flags: AT_REMOVEDIR).
func (i *Inspector) Unlink(dirfd int, name string, flags int) error {
	i.v.changes.all() // a repair by fd: freshness records every directory
	return i.v.fs.Unlinkat(dirfd, name, flags)
}

// Sync makes what was done in directory (or file) fd durable.
func (i *Inspector) Sync(fd int) error { return i.v.fs.Fsync(fd) }

// NewDirID writes a new directory ID into directory dirfd, replacing a
// missing or torn one (the caller checked that no entry depends on it).
func (i *Inspector) NewDirID(dirfd int) error {
	i.v.changes.all() // a repair by fd: freshness records every directory
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
	i.v.changes.all() // a repair by fd: freshness records every directory
	fd, _, err := backing.OpenRegular(dirfd, name, unix.O_WRONLY)
	if err != nil {
		return err
	}
	f := i.v.fs.NewFile(fd, nil)
	defer f.Close()
	if _, err := f.WriteAt(hdr, 0); err != nil {
		return err
	}
	return f.Sync()
}

// RebindDir binds directory name of dirfd ("" for dirfd) to p only,
// dropping the binding of a place it is not at.
func (i *Inspector) RebindDir(dirfd int, name string, p Place) error {
	i.v.changes.all() // a repair by fd: freshness records every directory
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
	return unix.UtimesNanoAt(sub, ".", []unix.Timespec{st.Atim, st.Mtim}, 0)
}

// RebindFile binds file name of dirfd, found at p, to p and also only
// (the places of its other names), dropping every other binding.
func (i *Inspector) RebindFile(dirfd int, name string, p Place, also []Place) error {
	i.v.changes.all() // a repair by fd: freshness records every directory
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
	return backing.UtimesNanoAt(dirfd, name, [2]unix.Timespec{st.Atim, st.Mtim})
}

// Reroot recomputes the tag blocks and root of file name of dirfd, found
// at p, from its chunks read with v1's rules (a chunk that does not
// authenticate stops it).
func (i *Inspector) Reroot(dirfd int, name string, p Place) error {
	i.v.changes.all() // a repair by fd: freshness records every directory
	fd, st, err := backing.OpenRegular(dirfd, name, unix.O_RDWR)
	if err != nil {
		return err
	}
	bf := i.v.fs.NewFile(fd, nil)
	defer bf.Close()
	if err := i.v.core.Reroot(bf, p); err != nil {
		return err
	}
	return backing.UtimesNanoAt(dirfd, name, [2]unix.Timespec{st.Atim, st.Mtim})
}
