package upgrade

import (
	"errors"
	"fmt"
	"github.com/encryptfs/encryptfs/internal/session"
	"io"
	"path"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// Compact roots by the upgrade (docs/format.md §16 "Upgrading",
// design/format-v2.md §5 "Compact roots"): a vault with FileRoots
// without CompactRoots gets the flag, and every file with roots stored
// in the FileRoots layout is rewritten in the compact one. Only chunks
// 0..15 and tag block 0 move (group 0 keeps its size, so every byte from
// chunk 16 on stays where it is); the header does not change, so
// freshness records stay valid and nothing is decrypted or re-encrypted.
//
// Which files are done is told by the file itself: a clean header whose
// root verifies with tag block 0 read in the compact layout is done, one
// whose root verifies in the FileRoots layout is to convert (for a file
// of 17+ chunks both backing sizes agree; the root tells them apart,
// 2^-128 to be wrong), one whose root verifies in neither blocks the
// upgrade (fsck reports it). A DIRTY file (no root to tell by; only the
// FileRoots layout has them, the conversion writes clean headers) is
// re-rooted in place first, as fsck --repair does, before the marker is
// written: its entries rebuilt from its chunks under v1's rules, which
// writes a clean header (gen+1: freshness takes a later gen as OK).
//
// Each file is converted by a copy beside it renamed over it
// (upgrader.replaceWith). A file of several names (one inode) is
// converted under its first name and its other names linked to the copy
// (upgrader.relink); a crash in between leaves names of the old inode
// beside the converted one with the very same header bytes (file ID,
// gen, root, bindings): the resumed scan links them to it.

// compactState is what the compact step does with an inode.
type compactState int

const (
	compactDone    compactState = iota // compact layout, root verified
	compactConvert                     // FileRoots layout, root verified
	compactDirty                       // DIRTY: re-rooted, then converted
	compactRelink                      // a crash split its names: link them to a converted twin
)

// compacter is one run of the compact step; its upgrader's v1 is the
// upgrade's session (fs, rand), b the session with the compact layout,
// old the one with the FileRoots layout.
type compacter struct {
	*upgrader
	old    *session.Session
	inodes []*cInode
	// tempLinks counts the names of an inode under the upgrade's temp
	// prefix: a relink interrupted between its link and its rename
	// (removed before the conversion starts).
	tempLinks map[[2]uint64]int
	files     int64 // inodes to rewrite and their bytes (progress)
	bytes     int64

	converted, rerooted int
}

// cName is one name of a file found by the compact scan.
type cName struct {
	dir         *upDir
	name, plain string
	place       bind.Place
}

// cInode is a regular file found by the compact scan: its names, and
// what to do with it.
type cInode struct {
	names []cName
	st    unix.Stat_t
	state compactState
	hdr   string  // header bytes at the scan, to match the halves of a split link
	twin  *cInode // compactRelink: the converted inode to link the names to
}

// newCompacter is the compact step of the upgrade u (whose b has the
// compact layout), with old, a session of the FileRoots layout.
func newCompacter(u *upgrader, old *session.Session) *compacter {
	return &compacter{upgrader: &upgrader{v1: u.v1, b: u.b, rootfd: u.rootfd}, old: old}
}

// prepare scans the vault (read-only) and re-roots its DIRTY files;
// afterwards every file left to convert has a verified root in the
// FileRoots layout. ErrBlocked if a file cannot be converted.
func (c *compacter) prepare() error {
	if err := c.scan(); err != nil {
		return err
	}
	if len(c.problems) > 0 {
		return c.blocked()
	}
	for _, in := range c.inodes {
		if in.state != compactDirty {
			continue
		}
		n := in.names[0]
		if err := c.inDir(n.dir, func(fd int) error { return c.reroot(fd, n) }); err != nil {
			return fmt.Errorf("%w: %s: DIRTY, and re-rooting it failed (%v); encryptfs fsck reports it (--salvage copies out what reads)", ErrBlocked, n.plain, err)
		}
		c.rerooted++
		in.state = compactConvert
	}
	return nil
}

// scan walks the vault (tree.Walk) with b's names and finds what is
// left to convert.
func (c *compacter) scan() error {
	root := &upDir{rel: ".", plain: "/", place: c.b.Tree().RootPlace()}
	byInode := map[[2]uint64]*cInode{}
	c.tempLinks = map[[2]uint64]int{}
	err := tree.Walk(c.rootfd, root, tree.Walker{
		Enter: c.enterDir,
		Entry: func(wd *tree.WalkDir, name string, st unix.Stat_t, err error) (bool, any, error) {
			return c.scanEntry(wd, name, st, err, byInode)
		},
		OpenFailed: openFailed,
		Leave:      func(wd *tree.WalkDir) error { wd.Data.(*upDir).names = nil; return nil },
	})
	if err != nil {
		return err
	}
	done := map[string]*cInode{}
	for _, in := range c.inodes {
		if in.state == compactDone {
			done[in.hdr] = in
		}
	}
	for _, in := range c.inodes {
		switch {
		case int(in.st.Nlink) != len(in.names)+c.tempLinks[[2]uint64{in.st.Dev, in.st.Ino}]:
			c.problem("%s: has another hard link that the upgrade cannot see (outside the vault, or an entry whose name does not decrypt)", in.names[0].plain)
		case in.state == compactConvert && done[in.hdr] != nil:
			in.state, in.twin = compactRelink, done[in.hdr]
		case in.state == compactConvert || in.state == compactDirty:
			c.files++
			c.bytes += in.st.Size
		}
	}
	return nil
}

// enterDir starts the scan of directory d: its ID (one that does not
// read is a problem, and the directory is not scanned), the leftover
// temporaries among its names, and its entries.
func (c *compacter) enterDir(wd *tree.WalkDir) (bool, error) {
	d := wd.Data.(*upDir)
	id, err := c.b.Tree().DirIDs().Of(wd.ID, d.place)
	switch {
	case err != nil && d.rel == ".":
		return false, fmt.Errorf("session: upgrade: the root's directory ID: %w", err)
	case err != nil:
		c.problem("%s: directory ID: %v", d.plain, err)
		return false, nil
	case wd.ListErr != nil:
		return false, fmt.Errorf("session: upgrade: %s: %w", d.plain, wd.ListErr)
	}
	d.id = id
	for _, e := range wd.Ents {
		if strings.HasPrefix(e.Name, upgradeTempPrefix) {
			c.temps = append(c.temps, upTemp{dir: d, name: e.Name})
			if st, err := backing.Fstatat(wd.Fd, e.Name); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
				c.tempLinks[[2]uint64{st.Dev, st.Ino}]++
			}
		}
	}
	// With d's place: names made under a conflict copy of its ID file
	// (bound to the same place) are d's too (tree.DirIDs.Alts).
	list, _ := c.b.Tree().ListOf(wd, d.id, func() (bind.Place, error) { return d.place, nil })
	d.names = make(map[string]tree.Name, len(list))
	for _, e := range list {
		d.names[e.Name.Backing] = e.Name
	}
	return true, nil
}

// scanEntry scans entry name of directory wd (lstat st, or statErr); it
// asks the walk into a subdirectory.
func (c *compacter) scanEntry(wd *tree.WalkDir, name string, st unix.Stat_t, statErr error, byInode map[[2]uint64]*cInode) (bool, any, error) {
	d := wd.Data.(*upDir)
	n, ok := d.names[name]
	if !ok || errors.Is(statErr, unix.ENOENT) {
		return false, nil, nil
	}
	plain := path.Join(d.plain, n.Plain)
	if statErr != nil {
		return false, nil, fmt.Errorf("session: upgrade: %s: %w", plain, statErr)
	}
	place := c.b.Tree().Place(d.id, n)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return true, &upDir{rel: path.Join(d.rel, n.Backing), plain: plain, place: place}, nil
	case unix.S_IFREG:
		if st.Size == 0 {
			return false, nil, nil // no header: empty in every layout
		}
		name := cName{dir: d, name: n.Backing, plain: plain, place: place}
		key := [2]uint64{st.Dev, st.Ino}
		if in := byInode[key]; in != nil {
			in.names = append(in.names, name)
			return false, nil, nil
		}
		state, hdr, err := c.classify(wd.Fd, name)
		if err != nil {
			c.problem("%s: %v", plain, err)
			return false, nil, nil
		}
		in := &cInode{names: []cName{name}, st: st, state: state, hdr: hdr}
		byInode[key] = in
		c.inodes = append(c.inodes, in)
	}
	return false, nil, nil
}

// classify tells what file n (in dirfd) needs: its root verified in the
// compact layout (done), in the FileRoots one (to convert), or DIRTY.
func (c *compacter) classify(dirfd int, n cName) (compactState, string, error) {
	fd, _, err := backing.OpenRegular(dirfd, n.name, unix.O_RDONLY)
	if err != nil {
		return 0, "", err
	}
	defer backing.Close(fd)
	bf := backing.NewFile(fd, nil)
	hdr := make([]byte, content.HeaderSizeV2)
	if k, err := bf.ReadAt(hdr, 0); k != len(hdr) {
		return 0, "", fmt.Errorf("file header: %d bytes (%v)", k, err)
	}
	dirty, err := probeRoot(c.b.Engine(), bf, n.place)
	if err == nil {
		if dirty {
			return compactDirty, string(hdr), nil
		}
		return compactDone, string(hdr), nil
	}
	dirty, oerr := probeRoot(c.old.Engine(), bf, n.place)
	switch {
	case oerr != nil:
		return 0, "", fmt.Errorf("its root verifies in neither layout (%w); encryptfs fsck reports it, and --repair re-roots it if every chunk authenticates", oerr)
	case dirty:
		return compactDirty, string(hdr), nil
	}
	return compactConvert, string(hdr), nil
}

// probeRoot opens b with engine e at place p and, unless its header is
// DIRTY, reads its first byte: the first read loads every tag block and
// checks them against the root (fileengine.File.ReadAt).
func probeRoot(e *fileengine.Engine, b fileengine.Backing, p bind.Place) (dirty bool, err error) {
	f, err := e.OpenAt(b, p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if f.RootDirty() {
		return true, nil
	}
	var one [1]byte
	if _, err := f.ReadAt(one[:], 0); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return false, nil
}
