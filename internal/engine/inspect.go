package engine

import (
	"errors"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// Inspector is the raw-but-safe view of a vault that an offline check
// (internal/fsck) needs to report and repair what the engine's handles
// refuse: the one walk of CIPHERDIR (tree.Walk), a directory's ID read
// with or without its binding checked, one handle per directory
// (InspectDir, made once per walked directory, inspect_dir.go) through
// which its names are decrypted one by one (also under a conflicting
// directory ID), its symlinks read and its entries repaired
// (check_repair.go), xattrs decrypted per object (InspectObject), and
// files opened through the content engine over a backing the check
// supplies (a read-only one). Every byte still comes through
// internal/backing: the inspector adds views, not another way into
// CIPHERDIR.
//
// fsck keeps the policy: what is a finding, the report, the repair plan.
type Inspector struct{ v *Vault }

// Inspect returns the vault's inspector.
func (v *Vault) Inspect() *Inspector { return &Inspector{v: v} }

// Walker says what Walk does with each directory and name (tree.Walker).
type Walker = tree.Walker

// WalkDir is one directory of CIPHERDIR as Walk visits it.
type WalkDir = tree.WalkDir

// AltDirID is a conflict copy of a directory's ID file that a sync tool
// made (entries made under it are shown as conflict copies).
type AltDirID = tree.AltDirID

// Dirent is one name of a backing directory listing.
type Dirent = backing.Dirent

// Walk walks CIPHERDIR beneath root (OpenRoot; not closed) with w, data
// as the root's WalkDir.Data: the one walker every offline pass uses.
func (i *Inspector) Walk(root *InspectDir, data any, w Walker) error {
	return tree.Walk(root.fd(), data, w)
}

// Suite is the vault's content suite.
func (i *Inspector) Suite() *Suite { return i.v.core.Suite() }

// RootPlace is CIPHERDIR's root's place (location binding).
func (i *Inspector) RootPlace() Place { return i.v.tree.RootPlace() }

// DirID is the ID of walked directory d, which must be bound to p (with
// location binding; IsMisplaced otherwise; without, p is not looked at).
func (i *Inspector) DirID(d *WalkDir, p Place) ([]byte, error) { return i.v.tree.DirIDs().Of(d.ID, p) }

// DirIDUnchecked is the ID of walked directory d and the number of places
// its ID file binds it to, its bindings not checked.
func (i *Inspector) DirIDUnchecked(d *WalkDir) (id []byte, bindings int, err error) {
	return i.v.tree.DirIDs().OfUnchecked(d.ID)
}

// IsCorruptDir reports whether err is a directory ID file that is missing
// or malformed (not one that fails its binding).
func IsCorruptDir(err error) bool { return errors.Is(err, tree.ErrCorruptDir) }

// Backing is what the content engine reads a file through; a check
// passes a read-only one.
type Backing = fileengine.Backing

// RawFile is a file opened by the content engine over a Backing the
// caller supplies (not in the open-file table: for a check's own reads).
type RawFile = fileengine.File

// OpenRaw opens b with the vault's rules, unbound (a v1 vault).
func (i *Inspector) OpenRaw(b Backing) (*RawFile, error) { return i.v.core.Open(b) }

// OpenRawAt opens b found at place p (location binding: it must be bound
// there).
func (i *Inspector) OpenRawAt(b Backing, p Place) (*RawFile, error) { return i.v.core.OpenAt(b, p) }

// OpenUnrooted opens b found at p with v1's rules for its contents (its
// file root is not checked), so that a file whose root fails can still be
// read chunk by chunk.
func (i *Inspector) OpenUnrooted(b Backing, p Place) (*RawFile, error) {
	return i.v.core.OpenUnrooted(b, p)
}

// Bound reports whether the vault binds locations (format v2).
func (i *Inspector) Bound() bool { return i.v.Bound() }
