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

// Unlink removes name of d (flags: AT_REMOVEDIR).
func (d *InspectDir) Unlink(name string, flags int) error {
	err := d.i.v.fs.Unlinkat(d.fd(), name, flags)
	if err == nil {
		d.repaired(name)
	}
	return err
}

// repaired tells freshness (if on) that the repair changed name of d,
// by the directory's ID read from its ID file; a directory without a
// readable ID makes it record every directory. The batch records what
// the name is then (a repair leaves no expectation, expect.go: it may
// remove a sidecar or a conflict copy whose entry stays).
func (d *InspectDir) repaired(name string) {
	c := d.i.v.changes
	if c == nil {
		return
	}
	r := tree.ReadDirIDFile(d.fd())
	f, err := tree.ParseDirIDFile(r.Raw)
	if r.Err != nil || err != nil {
		c.all()
		return
	}
	c.touched(f.ID, name)
}

// Sync makes what was done in d durable.
func (d *InspectDir) Sync() error { return d.i.v.fs.Fsync(d.fd()) }

// NewDirID writes a new directory ID into d, replacing a missing or torn
// one (the caller checked that no entry depends on it).
func (d *InspectDir) NewDirID() error {
	i, dirfd := d.i, d.fd()
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
// of d and fsyncs it.
func (d *InspectDir) RewriteHeader(name string, hdr []byte) error {
	fd, _, err := backing.OpenRegular(d.fd(), name, unix.O_WRONLY)
	if err != nil {
		return err
	}
	f := d.i.v.fs.NewFile(fd, nil)
	defer f.Close()
	if _, err := f.WriteAt(hdr, 0); err != nil {
		return err
	}
	d.repaired(name)
	return f.Sync()
}

// RebindDir binds directory name of d ("" for d) to p only, dropping the
// binding of a place it is not at.
func (d *InspectDir) RebindDir(name string, p Place) error {
	i := d.i
	sub, err := backing.OpenDir(d.fd(), name)
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

// RebindFile binds file name of d, found at p, to p and also only (the
// places of its other names), dropping every other binding.
func (d *InspectDir) RebindFile(name string, p Place, also []Place) error {
	i, dirfd := d.i, d.fd()
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
	d.repaired(name)
	return backing.UtimesNanoAt(dirfd, name, [2]unix.Timespec{st.Atim, st.Mtim})
}

// Reroot recomputes the tag blocks and root of file name of d, found at
// p, from its chunks read with v1's rules (a chunk that does not
// authenticate stops it).
func (d *InspectDir) Reroot(name string, p Place) error {
	i, dirfd := d.i, d.fd()
	fd, st, err := backing.OpenRegular(dirfd, name, unix.O_RDWR)
	if err != nil {
		return err
	}
	bf := i.v.fs.NewFile(fd, nil)
	defer bf.Close()
	if err := i.v.core.Reroot(bf, p); err != nil {
		return err
	}
	d.repaired(name)
	return backing.UtimesNanoAt(dirfd, name, [2]unix.Timespec{st.Atim, st.Mtim})
}
