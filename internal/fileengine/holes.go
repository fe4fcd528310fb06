package fileengine

import (
	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// SPARSE is not sticky. A file keeps the flag only while it has a hole: a
// write that fills the last one clears it (docs/format.md §5.4), so zeros
// swapped into a chunk of a file that was grown by truncate or fallocate
// and then written in full fail authentication again.
//
// Knowing whether a hole is left must cost little per write. A File of a
// SPARSE file tracks, from its first write on:
//   - hole: a chunk known to be stored as a hole (when holeKnown). While a
//     write does not rewrite it, a hole is left and nothing is checked.
//   - dense: chunks below it are known not to be holes (sealed by this
//     File, or read and found not to be all zeros).
// When the known hole is filled, findHole looks for another: first with
// SEEK_HOLE where the backing offers it (one seek and a one-chunk read for
// a file with real holes), then by reading the stored chunks from dense
// on. A chunk counts as a hole only when its stored bytes read as zeros:
// what the file system says is a hint, because a hole stored as written
// zeros (a file system without holes, punch-hole emulated with zeros, a
// CIPHERDIR copied without --sparse) is still a hole that only SPARSE lets
// read. A file without SPARSE pays nothing.

// fileHoles is the hole side of a File: it owns the rule above (SPARSE
// is kept only while a hole is left) and the v1 hole rule that goes with
// it (an all-zero stored chunk reads as zeros only where SPARSE, or a
// DIRTY file with roots, allows it). Its state is guarded by File.mu.
type fileHoles struct {
	f *File
	// hole is a chunk stored as a hole when holeKnown; chunks below
	// dense are known not to be holes.
	hole      uint64
	holeKnown bool
	dense     uint64
}

// maxSeekHints bounds the SEEK_HOLE candidates tried before reading.
const maxSeekHints = 4

// afterWrite updates the hole tracking after a successful write planned by
// p, and clears SPARSE when the write filled the file's last hole. Called
// with mu held for writing. It fails only when clearing SPARSE left a
// damaged header (checkHoles).
func (fh *fileHoles) afterWrite(p *writePlan) error {
	if !fh.sparse() {
		return nil
	}
	if p.holesTo > p.holesFrom {
		fh.dense = min(fh.dense, p.holesFrom)
		fh.hole, fh.holeKnown = p.holesFrom, true
		return nil
	}
	if p.runStart <= fh.dense {
		fh.dense = max(fh.dense, p.last+1)
	}
	if fh.holeKnown && p.written(fh.hole) {
		fh.holeKnown = false
	}
	return fh.checkHoles()
}

// checkHoles clears SPARSE if no hole is known and none is found. A failed
// header write that puts the old header back leaves the flag set (the
// weaker but safe state) and is no error; one that leaves the header
// damaged is returned, so the request that got here does not report a
// success the file cannot be opened to see.
func (fh *fileHoles) checkHoles() error {
	f := fh.f
	if fh.holeKnown || !fh.sparse() {
		return nil
	}
	if f.size == 0 || !fh.findHole() {
		return fh.clearSparse()
	}
	return nil
}

// forgetHoles drops the tracking (after a failed write or a shrink).
func (fh *fileHoles) forgetHoles(below uint64) {
	fh.holeKnown = false
	fh.dense = min(fh.dense, below)
}

// findHole looks for a stored hole among the chunks before the last one
// and records it. It reports false only when every such chunk was read and
// none is a hole; a read error counts as "maybe a hole" (true, unknown).
func (fh *fileHoles) findHole() bool {
	f := fh.f
	e := f.e
	last := f.lastIndex()
	if fh.dense >= last {
		return false
	}
	if hs, ok := f.b.(holeSeeker); ok {
		pos := e.cipherOffset(fh.dense)
		for range maxSeekHints {
			h, err := hs.SeekHole(pos)
			if err != nil || h < pos {
				break
			}
			i := uint64((h - e.lay.header) / int64(e.cipherChunk))
			if i >= last {
				break
			}
			isHole, err := fh.storedHole(i)
			if err != nil {
				return true
			}
			if isHole {
				fh.hole, fh.holeKnown = i, true
				return true
			}
			pos = e.cipherOffset(i + 1)
		}
	}
	// Read what the file system could not vouch for, window by window.
	buf := e.bufs.get(e.windowChunks * e.cipherChunk)
	defer e.bufs.put(buf)
	for fh.dense < last {
		n := min(uint64(e.windowChunks), last-fh.dense)
		stored := (*buf)[:n*uint64(e.cipherChunk)]
		if readFullAt(f.b, stored, e.cipherOffset(fh.dense)) != nil {
			return true
		}
		for k := range n {
			if content.IsHole(stored[k*uint64(e.cipherChunk) : (k+1)*uint64(e.cipherChunk)]) {
				fh.dense += k
				fh.hole, fh.holeKnown = fh.dense, true
				return true
			}
		}
		fh.dense += n
	}
	return false
}

// storedHole reports whether stored chunk i (a full, non-final chunk) is
// all zeros.
func (fh *fileHoles) storedHole(i uint64) (bool, error) {
	f := fh.f
	e := f.e
	buf := e.bufs.get(e.cipherChunk)
	defer e.bufs.put(buf)
	if err := readFullAt(f.b, *buf, e.cipherOffset(i)); err != nil {
		return false, err
	}
	return content.IsHole(*buf), nil
}

// sparse reports whether the header allows holes.
func (fh *fileHoles) sparse() bool {
	f := fh.f
	return f.rt == nil && f.hasHeader && f.hdr.Flags&content.FlagSparse != 0
}

// v1Holes reports whether an all-zero non-final stored chunk reads as a
// hole: in a SPARSE file, and in a file with roots whose tag entries are
// not trusted (a DIRTY file, read with v1's rules).
func (fh *fileHoles) v1Holes() bool {
	f := fh.f
	return fh.sparse() || f.rt != nil && !f.rt.trusted
}

// clearSparse drops the SPARSE flag of a file without holes (after
// truncate to 0, or once its last hole is filled: checkHoles), narrowing the
// residual hole risk described in docs/format.md §5.4. A write that fails
// but leaves the old header in place is no error: SPARSE stays set, the
// weaker but readable state.
func (fh *fileHoles) clearSparse() error {
	f := fh.f
	if !fh.sparse() {
		return nil
	}
	// What filled or removed the last hole must be durable before the
	// flag goes: else a power loss could keep the header and lose the
	// writes, leaving a hole the header no longer allows (found by
	// internal/crashsim's replay, "data": writing into the holes). One
	// fsync when a file loses its last hole.
	if err := f.b.Sync(); err != nil {
		return err
	}
	h := f.hdr
	h.Flags &^= content.FlagSparse
	if kept, err := f.writeHeader(h); err != nil && !kept {
		return err
	}
	return nil
}
