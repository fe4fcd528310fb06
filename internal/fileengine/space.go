package fileengine

import (
	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
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
	// dataSeeker finds the first data at or after off, io.EOF if none
	// (backing.File.SeekData). What it skips reads as zeros.
	dataSeeker interface {
		SeekData(off int64) (int64, error)
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
func (b fdSpace) SeekData(off int64) (int64, error) { return backing.SeekData(b.fd, off) }

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

// fileSpace is the backing-space side of a File: it owns the rules that
// a write which grows a file that holds anything reserves its bytes
// before it changes any (so a full disk fails it whole), that what was
// reserved ahead is given back when the File settles, and that a hole
// punched in the plaintext is punched in the backing file only where
// whole chunks (and, with roots, their tag entries) allow. Its state is
// guarded by File.mu.
type fileSpace struct {
	f *File
	// reservedTo is the backing offset up to which reserveGrowth has
	// reserved space past the end for a file that keeps growing; 0 when
	// nothing is known to be reserved. Any cut of the backing file resets
	// it (the cut frees what lay past the new end).
	reservedTo int64
}

// reserve allocates the backing bytes [from, to) before a write that grows
// the file (plan.reserveFrom..reserveTo), so that a full disk (ENOSPC,
// EDQUOT) fails the write before any byte of the file has changed. A
// backing that cannot reserve is written unreserved; undoGrow covers it.
func (fs *fileSpace) reserve(from, to int64) error {
	f := fs.f
	r, ok := f.b.(spaceReserver)
	if !ok || to <= from {
		return nil
	}
	return r.ReserveSpace(from, to-from)
}

// A file that keeps growing (dd, cp, a download) reserves space past its
// end in steps instead of once per write. Why: in the profile of a
// 1000 MiB dd (bs=128k) through the mount, the fallocate of every growing
// write took 28-31% of the daemon's CPU; reserving 8 MiB ahead made the
// write 1.16x faster (docs/performance.md, "Streaming"). Small files, the
// untar case, are unchanged: the step starts once a file holds
// reserveAheadMin bytes, so a file written and closed below that never
// reserves more than it stores.
const (
	// reserveAheadMin is the plaintext size from which a growing write
	// reserves ahead.
	reserveAheadMin = 1 << 20
	// reserveAheadMax bounds the step: what one growing file can hold
	// past its end while open.
	reserveAheadMax = 8 << 20
)

// reserveGrowth reserves [from, to) for a growing write (plan.reserveFrom..
// reserveTo) so that a full disk fails the write before any byte changes,
// as reserve does. A write whose range an earlier step already reserved
// makes no call. From reserveAheadMin on, it also reserves a step past to
// (a quarter of the file, at most reserveAheadMax); if the step does not
// fit, exactly [from, to) is reserved, so a nearly full disk refuses no
// write that fits. Close gives back what was reserved past the end.
//
// The first write into an empty backing file (no header, no data: a file
// just created) reserves nothing: there is no byte of the file for a
// full disk to cost, since undoGrow empties it again, which is the state
// it was in. That is one fallocate fewer per new file: for a tar -x of
// 7,972 files, 19,257 instead of 27,201 (tar writes records of 10 KiB,
// each a growing write); all reservations together were about 3% of the
// daemon's CPU samples in an untar (docs/performance.md, "One fallocate
// fewer per new file").
func (fs *fileSpace) reserveGrowth(from, to, oldSize int64) error {
	f := fs.f
	if to <= from || oldSize == 0 && !f.hasHeader {
		return nil
	}
	if _, ok := f.b.(spaceReserver); !ok {
		return nil
	}
	if to <= fs.reservedTo { // from is past the old end: inside the step
		return nil
	}
	if oldSize >= reserveAheadMin {
		ahead := min(int64(reserveAheadMax), to/4)
		if fs.reserve(from, to+ahead) == nil {
			fs.reservedTo = to + ahead
			return nil
		}
	}
	if err := fs.reserve(from, to); err != nil {
		return err
	}
	fs.reservedTo = max(fs.reservedTo, to)
	return nil
}

// trimReserved gives back the space reserved past the end of the file
// (reserveGrowth), when the backing can punch holes. Errors are ignored:
// the blocks only cost space, and a later cut of the file frees them too.
func (fs *fileSpace) trimReserved() {
	f := fs.f
	end := f.e.lay.cipherSize(f.size)
	if !f.hasHeader || fs.reservedTo <= end {
		fs.reservedTo = 0
		return
	}
	if p, ok := f.b.(holePuncher); ok {
		p.PunchHole(end, fs.reservedTo-end)
	}
	fs.reservedTo = 0
}

// punchStored turns stored chunks [first, end) into holes: deallocated when
// the backing can punch holes, else overwritten with zeros.
func (fs *fileSpace) punchStored(first, end uint64) error {
	return fs.f.e.roots.punch(fs, first, end)
}

// punchTagged is punchStored for a file with roots: the holes' tag
// entries become zero (a hole is a zero entry under the root) and the
// chunks are punched. Where the backing punches holes, the whole range is
// one punch, the tag blocks between included: a block not in the table
// is zeros and stays so, and the blocks in it that held entries of the
// range are written back whole after it (the header is DIRTY: the order
// of the two is free, finalize makes both durable before a clean header).
// So a punch costs the blocks that held data, not the range's size.
// Otherwise the chunks are overwritten with zeros group by group, never
// a tag block between them: of the groups that held entries when the
// entries are trusted (another chunk with a zero entry is a hole already),
// of every group when they are not (they say nothing of the chunks).
func (fs *fileSpace) punchTagged(first, end uint64) error {
	f := fs.f
	e := f.e
	rs := f.rt
	held := rs.tags.clear(first, end)
	start, stop := e.cipherOffset(first), e.cipherOffset(end-1)+int64(e.cipherChunk)
	if p, ok := f.b.(holePuncher); ok && p.PunchHole(start, stop-start) == nil {
		for _, g := range held {
			if err := f.rooted.writeEntries(g*content.TagEntries, g*content.TagEntries+content.TagEntries-1, f.size); err != nil {
				f.afterFailedWrite()
				return err
			}
		}
		return nil
	}
	run := func(lo, hi uint64) error { // chunks [lo, hi] of one group
		if err := f.rooted.writeEntries(lo, hi, f.size); err != nil {
			f.afterFailedWrite()
			return err
		}
		return fs.punchRun(lo, hi+1)
	}
	if rs.trusted {
		for _, g := range held {
			if err := run(max(first, g*content.TagEntries), min(end-1, g*content.TagEntries+content.TagEntries-1)); err != nil {
				return err
			}
		}
		return nil
	}
	for first < end {
		last := e.lay.runEnd(first, end-1)
		if err := run(first, last); err != nil {
			return err
		}
		first = last + 1
	}
	return nil
}

// punchRun turns stored chunks [first, end) into holes.
func (fs *fileSpace) punchRun(first, end uint64) error {
	f := fs.f
	e := f.e
	// Run by run of chunks stored back to back: never over the entries
	// between two runs (a compact layout's pieces of tag block 0).
	for first < end {
		last := e.lay.runEnd(first, end-1)
		start, stop := e.cipherOffset(first), e.cipherOffset(last)+int64(e.cipherChunk)
		first = last + 1
		if p, ok := f.b.(holePuncher); ok && p.PunchHole(start, stop-start) == nil {
			continue
		}
		for pos := start; pos < stop; {
			n := min(stop-pos, int64(len(e.zeroStore)))
			if err := writeFullAt(f.b, e.zeroStore[:n], pos); err != nil {
				f.afterFailedWrite()
				return err
			}
			pos += n
		}
	}
	return nil
}
