package tree

import (
	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"golang.org/x/sys/unix"
)

// rebinding is what location binding adds to the operations that make,
// move and remove names, chosen once in newTree: unbound (format 1 and
// unbound format-2 vaults: nothing to add) or *rebinder (bound_rename.go).
// Mkdir, Unlink, Link and Rename call it instead of asking, in every
// method, whether the vault binds; the ID file layout is the other half
// of the strategy (idLayout, layout.go).
type rebinding interface {
	// bound reports whether the vault binds locations (Tree.Bound).
	bound() bool
	// links is the vault's LinkStore (Tree.Links; nil: none).
	links() *LinkStore
	// setFiles sets the FileSource headers are rebound through.
	setFiles(FileSource)
	// needPlace is errNoPlace where making an entry in d needs d's ID
	// for its binding and d was built without it (Mkdir).
	needPlace(d Dir) error
	// begin is step 1 of a rename or link (bound_rename.go) of the object
	// at from (backing stat st) to to.
	begin(dirfd int, n Name, st *unix.Stat_t, from, to bind.Place, keepFree int) (rebind, error)
	// beginDropReplaced prepares dropping place p's binding from the file
	// a rename replaces there, if it lives on under other names.
	beginDropReplaced(newfd int, newN Name, st *unix.Stat_t, p bind.Place) rebind
	// finishAll is step 3 for the objects of a rename between dirfds.
	finishAll(dirfds []int, rbs ...rebind)
	// unlink removes entry n of d (of file type mode, 0 if unknown)
	// through rm (the unbound unlink), dropping n's binding from a file
	// that lives on under other names (Tree.Unlink); sole: the caller
	// knows n is a regular file with no other name (Tree.UnlinkSole).
	unlink(d Dir, n Name, mode uint32, sole bool, rm func(mode uint32) error) error
	// link links oldN of od (backing stat st) as newN of nd through ln
	// (the unbound link), binding the file to the new name first
	// (Tree.Link).
	link(od Dir, oldN Name, st *unix.Stat_t, nd Dir, newN Name, ln func() error) error
}

// unbound is the rebinding of a vault without location binding: names
// are made, moved and removed as they are, nothing is bound.
type unbound struct{}

func (unbound) bound() bool                { return false }
func (unbound) links() *LinkStore          { return nil }
func (unbound) setFiles(FileSource)        {}
func (unbound) needPlace(Dir) error        { return nil }
func (unbound) finishAll([]int, ...rebind) {}

func (unbound) begin(int, Name, *unix.Stat_t, bind.Place, bind.Place, int) (rebind, error) {
	return noRebind, nil
}

func (unbound) beginDropReplaced(int, Name, *unix.Stat_t, bind.Place) rebind { return noRebind }

func (unbound) unlink(_ Dir, _ Name, mode uint32, _ bool, rm func(uint32) error) error {
	return rm(mode)
}

func (unbound) link(_ Dir, _ Name, _ *unix.Stat_t, _ Dir, _ Name, ln func() error) error {
	return ln()
}

func (r *rebinder) bound() bool            { return true }
func (r *rebinder) links() *LinkStore      { return r.bind.Links }
func (r *rebinder) setFiles(fs FileSource) { r.files = fs }

func (r *rebinder) needPlace(d Dir) error {
	if d.id == nil {
		return errNoPlace
	}
	return nil
}

// unlink opens a file with several names at n's place before removing n
// (a known non-regular entry, one in a Dir without its ID, or a file the
// caller knows has no other name (sole) is removed as is), and drops the
// binding once the unlink is durable: else the binding would stay, and
// the name's place would stay valid for the contents. Whether the file
// has other names is asked of the backing (its link count), one fstatat
// per unlink, unless the caller knows (sole).
func (r *rebinder) unlink(d Dir, n Name, mode uint32, sole bool, rm func(uint32) error) error {
	if d.id == nil || mode != 0 && mode != unix.S_IFREG || sole {
		return rm(mode)
	}
	st, err := backing.Fstatat(d.fd, n.Backing)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
		return rm(mode)
	}
	p := placeOf(d.id, n)
	f, release, err := r.openFile(d.fd, n.Backing, p)
	if err != nil {
		return err
	}
	defer release()
	keep, err := keepTimes(d.fd, n.Backing, &st)
	if err != nil {
		return err
	}
	defer keep()
	if err := rm(unix.S_IFREG); err != nil {
		return err
	}
	// The unlink has happened: as in finishAll, what fails after it
	// leaves a stale binding, not a failed unlink.
	if r.fs.Fsync(d.fd) == nil {
		f.DropBinding(p)
	}
	return nil
}

// link binds the object to its new name, durably, before ln links it:
// that needs od's ID, without which a regular file is not linked
// (errNoPlace).
func (r *rebinder) link(od Dir, oldN Name, st *unix.Stat_t, nd Dir, newN Name, ln func() error) error {
	if od.id == nil {
		if st.Mode&unix.S_IFMT == unix.S_IFREG {
			return errNoPlace
		}
		return ln()
	}
	rb, err := r.begin(od.fd, oldN, st, placeOf(od.id, oldN), placeOf(nd.id, newN), 1)
	if err != nil {
		return err
	}
	// The old name keeps its binding: finish only releases the file.
	defer rb.finish(false)
	return ln()
}
