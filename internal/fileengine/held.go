package fileengine

// A new small file's first write, made clean in one backing write.
//
// With file roots a new file used to cost two header writes: born DIRTY
// with its first chunk (fileRoots.newWithChunk0), then clean when it
// settles (fileRoots.finalize: the close, or a stat or a setattr of times
// on the open file). For a file that stays within its first chunk (87% of
// the files of a kernel tree) the DIRTY header protects nothing a reader
// could see: nothing of the file is in the backing file before it. So the
// write request that makes such a file holds its backing write (chunk 0,
// with room for the header before it, one buffer) until its end, then
// settles the file there: the clean header and the chunk go in one
// pwrite. The header is put in the buffer only then (writeHeld), so the
// DIRTY header the file was born with is never marshaled: one header, one
// MAC and one system call per file, as format 1 pays; the settle that
// follows (the close) finds nothing to write.
//
// The write is held only within the call that made it, under the file's
// write lock: no other call ever sees it held. An earlier version held it
// until the file settled, across requests; through the mount that is the
// last RELEASE, which the kernel sends after close(2) has returned (the
// mount answers no FLUSH: forwardfs noFlush), so a program reading the
// backing file right after the close (a sync tool, a backup) found it
// empty, and a daemon killed then lost a file its writer had closed.
//
// Rules:
//   - Only a file whose backing is empty (no header) and whose write
//     starts at chunk 0 and leaves it one chunk long, in the compact
//     layout, is made this way (holdsFirst).
//   - A second write within chunk 0 finds the file clean and goes the
//     usual way (the DIRTY header with chunk 0 in one write, the clean
//     header at the settle).
//   - Freshness is told the clean header only (File.onHeader): the held
//     DIRTY one is never on disk.
//   - The space is reserved before the write (fileSpace.reserveGrowth), as
//     for any write.
//   - If the settle fails before its write (the root cannot be made), the
//     held bytes are written as they would have been (DIRTY header and
//     chunk): the write stands, and the close reports the settle's error.
//     If the backing write fails, or no header can be made (the keys were
//     wiped: a write racing a lock), the file is empty again, as after
//     any failed first write (undoGrow), and the write fails.
//
// What a crash sees: the backing file goes from empty to clean in one
// pwrite. A process killed in the middle of it (a fatal signal stops a
// write between pages) may leave the clean header over a torn chunk: the
// chunk fails either way, as it would under a DIRTY header; a power loss
// before an fsync may lose or tear any of it (docs/format.md §16,
// "Durability").

import "github.com/encryptfs/encryptfs/internal/crypto/content"

// holdsFirst reports whether a write planned by pl, which makes the new
// file's header (newWithChunk0), leaves the file one chunk long, so that
// its backing write may be held for the settle at the end of the call.
// Called with mu held for writing.
func (f *File) holdsFirst(pl *writePlan) bool {
	return f.held == nil && pl.newLast == 0 && pl.last == 0
}

// holdWrite holds the backing write of stored at offset at: the first of
// a new file (the header and chunk 0, from offset 0). It reports false
// when the write must be made.
func (f *File) holdWrite(stored []byte, at int64) bool {
	e := f.e
	if f.held != nil || at != 0 || len(stored) > int(e.lay.header)+e.cipherChunk {
		return false
	}
	f.held = e.bufs.get(int(e.lay.header) + e.cipherChunk)
	*f.held = append((*f.held)[:0], stored...)
	return true
}

// writeHeldClean settles the file whose first write this call holds: the
// clean header and the chunk in one backing write (finalize, writeHeld).
// See the package comment above for what a failure leaves. Called with mu
// held for writing, at the end of writeLocked.
func (f *File) writeHeldClean() error {
	if f.held == nil {
		return nil
	}
	err := f.settleLocked()
	if f.held == nil {
		return err // writeHeld ran: the file is clean, or empty again
	}
	// The settle stopped before its write: the write is made as it would
	// have been, DIRTY, and stands; the close settles it again.
	return f.flushHeld()
}

// flushHeld writes what is held, if anything, as it would have been
// written (the DIRTY header and chunk 0), and tells freshness of that
// header: the fallback of a settle that fails before its write. If the
// write fails the file is empty again (undoGrow). Called with mu held for
// writing.
func (f *File) flushHeld() error {
	if f.held == nil {
		return nil
	}
	return f.writeHeld(f.hdr)
}

// writeHeld makes the held write with header h, which it puts in the
// held buffer first (holdWrite left that part for now: a MAC per small
// file, paid here once), and gives the buffer back. On failure the file
// is empty again.
func (f *File) writeHeld(h content.Header) error {
	err := f.e.suite.PutHeader((*f.held)[:f.e.lay.header], h)
	if err == nil {
		err = writeFullAt(f.b, *f.held, 0)
	}
	f.dropHeld()
	if err != nil {
		f.e.roots.distrust(f)
		f.undoGrow(0, false)
		return err
	}
	f.hdr = h
	f.wroteHeader(h.FileID, h.Gen)
	return nil
}

// dropHeld gives the held buffer back.
func (f *File) dropHeld() {
	f.e.bufs.put(f.held)
	f.held = nil
}
