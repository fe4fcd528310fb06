package tree

import "github.com/encryptfs/encryptfs/internal/crypto/bind"

// Dir is a handle on one directory of the backing tree, as every door
// holds it: an open fd of the backing directory, the directory's ID, and,
// with location binding, how to find its place (its parent's ID and its
// full encrypted name) when a conflict copy of its ID file must be
// checked against it (altdir.go). A Dir does not own its fd: whoever
// opened it closes it. NewDir is the one way to build one.
type Dir struct {
	fd    int
	id    []byte
	place DirPlace
}

// DirPlace returns the place of a directory (its parent's ID and its full
// encrypted name; Tree.RootPlace for the root), with location binding. It
// is called only when a conflict copy of the directory's ID file is found,
// which is rare: callers compute the place lazily. nil: not known.
type DirPlace func() (bind.Place, error)

// NewDir returns the Dir of the open backing directory fd whose ID is id
// (nil: not known; the calls that need it fail with binding, and Unlink
// and Link then keep no file's bindings up to date) and whose place
// place finds (nil: not known, or no binding; the conflict copies of its
// ID file are then not used).
func NewDir(fd int, id []byte, place DirPlace) Dir {
	return Dir{fd: fd, id: id, place: place}
}

// FixedPlace is the DirPlace of a directory whose place p is known.
func FixedPlace(p bind.Place) DirPlace {
	return func() (bind.Place, error) { return p, nil }
}

// Fd returns the backing directory's fd.
func (d Dir) Fd() int { return d.fd }

// ID returns the directory's ID (nil: not known).
func (d Dir) ID() []byte { return d.id }
