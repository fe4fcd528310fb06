package core

import (
	"github.com/encryptfs/encryptfs/internal/backing"
)

// Optional methods of a Backing. The engine asks for them with a type
// assertion and does without where a backing lacks them; internal/backing's
// File has all three, and an *os.File gets them through withFdSpace.
type (
	// spaceReserver allocates [off, off+length) without changing the size,
	// failing only when space is short (backing.File.ReserveSpace).
	spaceReserver interface {
		ReserveSpace(off, length int64) error
	}
	// holePuncher deallocates [off, off+length), which then reads as zeros
	// (backing.File.PunchHole); on error nothing was punched.
	holePuncher interface {
		PunchHole(off, length int64) error
	}
	// holeSeeker finds the first hole at or after off (backing.File.SeekHole).
	// Its answer is a hint: a file system without hole tracking reports none.
	holeSeeker interface {
		SeekHole(off int64) (int64, error)
	}
)

// fdSpace gives a backing that is a real file without the optional methods
// (an *os.File, as vault opens) the space operations on its fd.
type fdSpace struct {
	Backing
	fd int
}

func (b fdSpace) ReserveSpace(off, length int64) error {
	return backing.ReserveSpace(b.fd, off, length)
}
func (b fdSpace) PunchHole(off, length int64) error { return backing.PunchHole(b.fd, off, length) }
func (b fdSpace) SeekHole(off int64) (int64, error) { return backing.SeekHole(b.fd, off) }

// withFdSpace wraps b in fdSpace when it has an fd but not the optional
// methods; any other backing is returned as it is.
func withFdSpace(b Backing) Backing {
	if _, ok := b.(spaceReserver); ok {
		return b
	}
	if fb, ok := b.(interface{ Fd() uintptr }); ok {
		return fdSpace{Backing: b, fd: int(fb.Fd())}
	}
	return b
}

// reserve allocates the backing bytes [from, to) before a write that grows
// the file (plan.reserveFrom..reserveTo), so that a full disk (ENOSPC,
// EDQUOT) fails the write before any byte of the file has changed. A
// backing that cannot reserve is written unreserved; undoGrow covers it.
func (f *File) reserve(from, to int64) error {
	r, ok := f.b.(spaceReserver)
	if !ok || to <= from {
		return nil
	}
	return r.ReserveSpace(from, to-from)
}

// punchStored turns stored chunks [first, end) into holes: deallocated when
// the backing can punch holes, else overwritten with zeros.
func (f *File) punchStored(first, end uint64) error {
	e := f.e
	start, stop := e.cipherOffset(first), e.cipherOffset(end)
	if p, ok := f.b.(holePuncher); ok && p.PunchHole(start, stop-start) == nil {
		return nil
	}
	for pos := start; pos < stop; {
		n := min(stop-pos, int64(len(e.zeroStore)))
		if err := writeFullAt(f.b, e.zeroStore[:n], pos); err != nil {
			f.afterFailedWrite()
			return err
		}
		pos += n
	}
	return nil
}
