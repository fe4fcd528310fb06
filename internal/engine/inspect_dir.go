package engine

import (
	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// InspectDir is one directory of CIPHERDIR as an offline check sees it:
// its fd, its ID as the check read it (nil: unreadable or not needed) and
// its place (nil: not known). The check makes one per directory it walks
// (Inspector.Dir) or repairs (Inspector.OpenRoot, Open, Sub), and reads,
// decrypts and repairs the directory's names through it, so that it never
// assembles a (fd, ID, place) tuple itself. The repairs are in
// check_repair.go.
type InspectDir struct {
	i     *Inspector
	d     tree.Dir
	owned bool // the fd is closed by Close (not the walk's)
}

// Dir is walked directory wd with ID id (nil: unreadable) at place p
// (nil: not known). Its fd stays the walk's: valid until the walk leaves
// wd.
func (i *Inspector) Dir(wd *WalkDir, id []byte, p *Place) *InspectDir {
	var dp DirPlace
	if p != nil {
		dp = tree.FixedPlace(*p)
	}
	return &InspectDir{i: i, d: tree.NewDir(wd.Fd, id, dp)}
}

// OpenRoot opens CIPHERDIR's root (its ID not read), the caller's to
// Close: where a check's walk starts and its repairs find their
// directories.
func (i *Inspector) OpenRoot() (*InspectDir, error) {
	fd, err := i.v.OpenRootFD()
	if err != nil {
		return nil, err
	}
	return i.owned(fd), nil
}

// owned is a handle on fd, which its Close closes.
func (i *Inspector) owned(fd int) *InspectDir {
	return &InspectDir{i: i, d: tree.NewDir(fd, nil, nil), owned: true}
}

// Open opens the directory at relative backing path rel beneath d ("."
// for d itself, as a new fd), no symlink followed; the caller's to Close.
func (d *InspectDir) Open(rel string) (*InspectDir, error) {
	fd, err := backing.OpenDir(d.fd(), rel)
	if err != nil {
		return nil, err
	}
	return d.i.owned(fd), nil
}

// Sub opens subdirectory name of d (no symlink followed); the caller's to
// Close.
func (d *InspectDir) Sub(name string) (*InspectDir, error) {
	fd, err := backing.OpenSubdir(d.fd(), name)
	if err != nil {
		return nil, err
	}
	return d.i.owned(fd), nil
}

// Close closes d's fd if d opened it (not a walked directory's).
func (d *InspectDir) Close() error {
	if !d.owned {
		return nil
	}
	d.owned = false
	return backing.Close(d.fd())
}

// fd is d's backing directory fd.
func (d *InspectDir) fd() int { return d.d.Fd() }

// ProbeXattrs reports (an error of which IsNoXattrs is true) when the
// backing store of d keeps no extended attributes.
func (d *InspectDir) ProbeXattrs() error { return tree.ProbeXattrs(d.fd()) }

// Place is where entry n of d is bound (location binding; d's ID must be
// known).
func (d *InspectDir) Place(n Name) Place { return d.i.v.tree.Place(d.d.ID(), n) }

// AltDirIDs reads the conflict copies of d's ID file among ents (d's
// listing): the valid ones (bound to d's place, with location binding),
// and the names of those that are unreadable.
func (d *InspectDir) AltDirIDs(ents []Dirent) (alts []AltDirID, invalid []string) {
	return d.i.v.tree.DirIDs().Alts(d.d, ents)
}

// DecryptName decrypts backing name bn of d (reading its sidecar if it is
// a long name).
func (d *InspectDir) DecryptName(bn string) (Name, error) { return d.i.v.tree.DecryptName(d.d, bn) }

// DecryptAlt decrypts bn under one of d's conflicting IDs alts, as the
// mount shows it (a conflict copy).
func (d *InspectDir) DecryptAlt(alts []AltDirID, bn string) (Name, bool) {
	return d.i.v.tree.DecryptAlt(d.d, alts, bn)
}

// Resolve is the mount's lookup of plain in d: the entry it shows under
// that name.
func (d *InspectDir) Resolve(plain string) (Name, unix.Stat_t, error) {
	return d.i.v.tree.Resolve(d.d, plain, false)
}

// Readlink decrypts the target of symlink n of d.
func (d *InspectDir) Readlink(n Name) (string, error) {
	return d.i.v.tree.Symlinks().Readlink(d.d, n)
}

// The raw reads of d, each through internal/backing: beneath d, no
// symlink followed, no FIFO opened.

// Stat is the backing stat of d itself.
func (d *InspectDir) Stat() (unix.Stat_t, error) { return backing.Fstat(d.fd()) }

// StatAt is the lstat of name in d.
func (d *InspectDir) StatAt(name string) (unix.Stat_t, error) { return backing.Fstatat(d.fd(), name) }

// List lists every name of d but "." and "..".
func (d *InspectDir) List() ([]Dirent, error) { return backing.ReadDir(d.fd()) }

// OpenRegular opens name in d with flags if it is a regular file
// (ErrNotRegular otherwise: a FIFO planted at the name does not hang the
// caller), and returns its fd (the caller's) and stat.
func (d *InspectDir) OpenRegular(name string, flags int) (int, unix.Stat_t, error) {
	return backing.OpenRegular(d.fd(), name, flags)
}

// ReadlinkRaw is the raw (encrypted) target of symlink name in d.
func (d *InspectDir) ReadlinkRaw(name string) (string, error) {
	return backing.Readlinkat(d.fd(), name)
}

// ReadSmallFile reads regular file name of d, at most limit bytes (a
// sidecar, an ID file).
func (d *InspectDir) ReadSmallFile(name string, limit int) ([]byte, error) {
	return backing.ReadFileAt(d.fd(), name, limit)
}
