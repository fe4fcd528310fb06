package core

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

// maxSeekHints bounds the SEEK_HOLE candidates tried before reading.
const maxSeekHints = 4

// afterWrite updates the hole tracking after a successful write planned by
// p, and clears SPARSE when the write filled the file's last hole. Called
// with mu held for writing. It fails only when clearing SPARSE left a
// damaged header (checkHoles).
func (f *File) afterWrite(p *writePlan) error {
	if !f.sparse() {
		return nil
	}
	if p.holesTo > p.holesFrom {
		f.dense = min(f.dense, p.holesFrom)
		f.hole, f.holeKnown = p.holesFrom, true
		return nil
	}
	if p.runStart <= f.dense {
		f.dense = max(f.dense, p.last+1)
	}
	if f.holeKnown && p.written(f.hole) {
		f.holeKnown = false
	}
	return f.checkHoles()
}

// checkHoles clears SPARSE if no hole is known and none is found. A failed
// header write that puts the old header back leaves the flag set (the
// weaker but safe state) and is no error; one that leaves the header
// damaged is returned, so the request that got here does not report a
// success the file cannot be opened to see.
func (f *File) checkHoles() error {
	if f.holeKnown || !f.sparse() {
		return nil
	}
	if f.size == 0 || !f.findHole() {
		return f.clearSparse()
	}
	return nil
}

// forgetHoles drops the tracking (after a failed write or a shrink).
func (f *File) forgetHoles(below uint64) {
	f.holeKnown = false
	f.dense = min(f.dense, below)
}

// findHole looks for a stored hole among the chunks before the last one
// and records it. It reports false only when every such chunk was read and
// none is a hole; a read error counts as "maybe a hole" (true, unknown).
func (f *File) findHole() bool {
	e := f.e
	last := f.lastIndex()
	if f.dense >= last {
		return false
	}
	if hs, ok := f.b.(holeSeeker); ok {
		pos := e.cipherOffset(f.dense)
		for range maxSeekHints {
			h, err := hs.SeekHole(pos)
			if err != nil || h < pos {
				break
			}
			i := uint64((h - e.lay.header) / int64(e.cipherChunk))
			if i >= last {
				break
			}
			isHole, err := f.storedHole(i)
			if err != nil {
				return true
			}
			if isHole {
				f.hole, f.holeKnown = i, true
				return true
			}
			pos = e.cipherOffset(i + 1)
		}
	}
	// Read what the file system could not vouch for, window by window.
	buf := e.bufs.get(e.windowChunks * e.cipherChunk)
	defer e.bufs.put(buf)
	for f.dense < last {
		n := min(uint64(e.windowChunks), last-f.dense)
		stored := (*buf)[:n*uint64(e.cipherChunk)]
		if readFullAt(f.b, stored, e.cipherOffset(f.dense)) != nil {
			return true
		}
		for k := range n {
			if content.IsHole(stored[k*uint64(e.cipherChunk) : (k+1)*uint64(e.cipherChunk)]) {
				f.dense += k
				f.hole, f.holeKnown = f.dense, true
				return true
			}
		}
		f.dense += n
	}
	return false
}

// storedHole reports whether stored chunk i (a full, non-final chunk) is
// all zeros.
func (f *File) storedHole(i uint64) (bool, error) {
	e := f.e
	buf := e.bufs.get(e.cipherChunk)
	defer e.bufs.put(buf)
	if err := readFullAt(f.b, *buf, e.cipherOffset(i)); err != nil {
		return false, err
	}
	return content.IsHole(*buf), nil
}
