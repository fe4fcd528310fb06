package fileengine

// A new small file's first backing write, held until the file settles.
//
// With file roots a new file costs two header writes: born DIRTY with its
// first chunk (fileRoots.newWithChunk0), then clean at the close that
// settles it (fileRoots.finalize). For a file that stays within its first
// chunk (87% of the files of a kernel tree) the DIRTY header protects
// nothing a reader could see: nothing of the file is in the backing file
// before it. So the engine holds that first write (the DIRTY header and
// chunk 0, one buffer) in memory, and the settle writes the clean header
// and the chunk together, in one pwrite: one header, one MAC and one
// system call per file, as format 1 pays. Further writes that keep the
// file within chunk 0 replace the held chunk (tar writes a file of 10 to
// 16 KiB in two requests: one seal and one write instead of two each).
//
// Rules:
//   - Only a file whose backing is empty (no header) and whose first
//     write starts at chunk 0 and leaves it one chunk long, in the compact
//     layout, is held; and only while the engine holds less than
//     maxHeldBytes in all (an untar holds one file at a time).
//   - Anything else that would touch the backing file writes the held
//     bytes first, as they would have been written (flushHeld): a read, a
//     write past chunk 0, truncate, punch, fsync (then the fsync protocol
//     of docs/format.md §16 runs as for any DIRTY file), a binding's
//     change, EnsureID (an xattr is bound to the ID), Reload. The
//     in-memory state (size, header, tag entries, the cached last chunk)
//     is the same as if the write had been made, so nothing else changes.
//   - The held DIRTY header is told to freshness (File.onHeader) only if
//     it is written; a settle tells the clean one only. A batch in between
//     sees the file as created, with no header yet, which is what the disk
//     holds.
//   - The space is reserved at the write (fileSpace.reserveGrowth): a full
//     disk fails the write itself, not the close.
//
// What a crash sees: the backing file is empty until the settle (close(2),
// or a stat or setattr of times, which settle first), then holds the clean
// file. A process crash in between loses the held write (at most one
// chunk of each new file still open for writing, whose close then fails:
// the writer is told), where a DIRTY file would have stayed; a power
// loss could lose it either way (nothing was fsynced). docs/format.md §16.

import "github.com/encryptfs/encryptfs/internal/crypto/content"

// maxHeldBytes bounds what one engine holds: at a settle per file, an
// untar holds one, and a program with thousands of new files open at
// once has the rest written through.
const maxHeldBytes = 8 << 20

// holdsFirst reports whether a write planned by pl, which makes the new
// file's header (newWithChunk0), may be held: it leaves the file one
// chunk long. Called with mu held for writing.
func (f *File) holdsFirst(pl *writePlan) bool {
	return f.held == nil && pl.newLast == 0 && pl.last == 0
}

// keepsHeld reports whether a write planned by pl on a file whose first
// write is held may replace the held chunk: it rewrites chunk 0 and
// leaves the file one chunk long, with the chunk's plaintext at hand.
// Called with mu held for writing.
func (f *File) keepsHeld(pl *writePlan) bool {
	return f.held != nil && pl.newLast == 0 && pl.runStart == 0 && pl.last == 0 && !pl.separate && f.tail.ok
}

// hold keeps stored, the bytes of the backing file from offset 0 (the
// DIRTY header and chunk 0), instead of writing them. It reports false,
// keeping nothing, when the engine holds enough already.
func (f *File) hold(stored []byte) bool {
	e := f.e
	capacity := int(e.lay.header) + e.cipherChunk
	if len(stored) > capacity {
		return false
	}
	if e.held.Add(int64(capacity)) > maxHeldBytes {
		e.held.Add(-int64(capacity))
		return false
	}
	f.held = e.bufs.get(capacity)
	*f.held = append((*f.held)[:0], stored...)
	f.holding.Store(true)
	return true
}

// replaceHeld puts chunk 0's new stored bytes, at backing offset at (right
// after the header), in place of the held ones.
func (f *File) replaceHeld(stored []byte, at int64) {
	*f.held = append((*f.held)[:at], stored...)
}

// holdWrite holds the backing write of stored at offset at, chunk 0 of a
// file that stays one chunk long (sealAndWrite, with sealJob.hold): the
// first (the header and chunk 0, from offset 0), or a later one of chunk
// 0 alone. It reports false when the write must be made.
func (f *File) holdWrite(stored []byte, at int64) bool {
	switch {
	case f.held == nil && at == 0:
		return f.hold(stored)
	case f.held != nil && at == f.e.lay.header && int(at) <= len(*f.held) && int(at)+len(stored) <= cap(*f.held):
		f.replaceHeld(stored, at)
		return true
	}
	return false
}

// flushHeld writes what is held, if anything, as it would have been
// written (the DIRTY header and chunk 0), and tells freshness of that
// header. If the write fails the file is empty again, as after a failed
// first write (undoGrow), and the error is returned. Called with mu held
// for writing.
func (f *File) flushHeld() error {
	if f.held == nil {
		return nil
	}
	return f.writeHeld(f.hdr)
}

// settleHeld writes what is held with clean header h in place of the held
// DIRTY one: the file's first and only write. On failure the file is
// empty again (flushHeld). Called with mu held for writing.
func (f *File) settleHeld(h content.Header) error {
	copy(*f.held, f.e.suite.MarshalHeader(h))
	return f.writeHeld(h)
}

// writeHeld makes the held write, whose header is h, and gives the buffer
// back.
func (f *File) writeHeld(h content.Header) error {
	err := writeFullAt(f.b, *f.held, 0)
	f.dropHeld()
	if err != nil {
		f.e.roots.distrust(f)
		f.undoGrow(0, false)
		return err
	}
	f.hdr = h
	f.wroteHeader(&h)
	return nil
}

// dropHeld gives the held buffer back.
func (f *File) dropHeld() {
	e := f.e
	e.bufs.put(f.held)
	f.held = nil
	f.holding.Store(false)
	e.held.Add(-int64(int(e.lay.header) + e.cipherChunk))
}

// rlockWritten takes mu for reading once nothing is held: a reader of the
// backing file must find the held write there. It fails only if writing
// it does.
func (f *File) rlockWritten() error {
	for {
		f.mu.RLock()
		if !f.holding.Load() {
			return nil
		}
		f.mu.RUnlock()
		f.mu.Lock()
		err := f.flushHeld()
		f.mu.Unlock()
		if err != nil {
			return err
		}
	}
}
