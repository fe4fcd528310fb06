package fileengine

import (
	"fmt"
	"io"
	"math"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// Truncate shrinks or grows the file; growing keeps the backing file sparse.
func (f *File) Truncate(size int64) error {
	if size < 0 {
		return ErrInvalid
	}
	if size > f.e.lay.maxSize {
		return ErrTooLarge
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	switch {
	case size == f.size:
		return nil
	case size > f.size:
		// A write of nothing at the new end: re-seals the old last chunk,
		// leaves holes, and seals a zero-filled new last chunk.
		return f.writeLocked(nil, size, size)
	case size == 0:
		return f.truncateToEmpty()
	default:
		return f.shrink(size)
	}
}

// truncateToEmpty keeps the header (and so the file ID that xattrs are bound
// to) and drops every chunk.
func (f *File) truncateToEmpty() error {
	if !f.hasHeader {
		f.size = 0
		return nil
	}
	if err := f.rooted.markDirty(); err != nil {
		return err
	}
	f.space.reservedTo = 0
	if err := f.b.Truncate(f.e.lay.header); err != nil {
		f.afterFailedWrite()
		return fmt.Errorf("core: truncate backing: %w", err)
	}
	f.size = 0
	f.e.roots.emptied(f)
	f.tail.drop()
	f.holes.forgetHoles(0)
	if err := f.holes.clearSparse(); err != nil {
		return err
	}
	return f.renewEpoch() // epoch.go
}

// shrink cuts the file to size (0 < size < f.size): the new last chunk is
// re-sealed with final=1 at its new length.
func (f *File) shrink(size int64) error {
	e := f.e
	newLast := uint64((size - 1) / int64(e.chunkSize))
	buf := e.bufs.get(e.chunkSize)
	defer e.bufs.put(buf)
	plain, err := f.reads.chunkPlain((*buf)[:0], newLast)
	if err != nil {
		return err
	}
	if err := f.cutTo(size, plain); err != nil {
		f.holes.forgetHoles(0)
		return err
	}
	// The holes past the new end are gone; maybe the last one was.
	f.holes.dense = min(f.holes.dense, newLast)
	if f.holes.holeKnown && f.holes.hole >= newLast {
		f.holes.holeKnown = false
	}
	return f.holes.checkHoles()
}

// cutTo makes the file size bytes long (size > 0, not beyond the stored
// chunks) with last as the plaintext of its last chunk (at least that
// chunk's new length): the backing file is cut and the last chunk re-sealed
// with final=1.
func (f *File) cutTo(size int64, last []byte) error {
	e := f.e
	newLast := uint64((size - 1) / int64(e.chunkSize))
	plain := last[:e.plainLen(newLast, size)]

	nonce := e.bufs.get(e.nonceSize)
	defer e.bufs.put(nonce)
	// Why safe: a fresh random nonce under the per-file key, as for any write.
	if _, err := io.ReadFull(e.rand, *nonce); err != nil {
		return fmt.Errorf("core: random nonce: %w", err)
	}
	stored := e.bufs.get(len(plain) + e.overhead)
	defer e.bufs.put(stored)
	f.fc.Seal((*stored)[:0], plain, newLast, true, *nonce)
	if err := f.rooted.markDirty(); err != nil {
		return err
	}

	// Cut first, then write the new final chunk: a crash in between leaves a
	// last stored chunk that is cut short or has final=0, and fails to open.
	f.space.reservedTo = 0
	if err := f.b.Truncate(e.suite.CipherSize(size)); err != nil {
		f.afterFailedWrite()
		return fmt.Errorf("core: truncate backing: %w", err)
	}
	if err := writeFullAt(f.b, *stored, e.cipherOffset(newLast)); err != nil {
		f.afterFailedWrite()
		return err
	}
	if rs := f.rt; rs != nil {
		// The new last entry and zeros after it, to the end of its block:
		// entries past the end are zero (a later grow leaves holes there).
		rs.tags.cut(newLast + 1)
		f.rooted.setEntry(newLast, *stored)
		if err := f.rooted.writeEntries(newLast, newLast|(content.TagEntries-1), size); err != nil {
			f.afterFailedWrite()
			return err
		}
	}
	f.size = size
	f.tail.set(plain)
	return nil
}

// PunchHole zeroes [off, off+length) without changing the size, deallocating
// whole chunks in the backing file where it can (planPunch).
func (f *File) PunchHole(off, length int64) error {
	if off < 0 || length < 0 || length > math.MaxInt64-off {
		return ErrInvalid
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	end := min(off+length, f.size)
	if off >= end {
		return nil
	}
	pp := planPunch(f.e.lay, f.size, off, end)
	if err := f.writeZeros(pp.headFrom, pp.headTo); err != nil {
		return err
	}
	if pp.holeEnd <= pp.holeFirst {
		return nil
	}
	if err := f.prepareDataHeader(true); err != nil {
		return err
	}
	if err := f.rooted.markDirty(); err != nil {
		return err
	}
	f.holes.forgetHoles(pp.holeFirst)
	if err := f.space.punchStored(pp.holeFirst, pp.holeEnd); err != nil {
		return err
	}
	f.holes.hole, f.holes.holeKnown = pp.holeFirst, true
	return f.writeZeros(pp.tailFrom, pp.tailTo)
}

// writeZeros re-seals [from, to) as zeros through the write path, one chunk
// at a time (the range is at most two chunks long).
func (f *File) writeZeros(from, to int64) error {
	cs := int64(f.e.chunkSize)
	for from < to {
		n := min(to-from, cs-from%cs)
		if err := f.writeLocked(f.e.zeroPlain[:n], from, f.size); err != nil {
			return err
		}
		from += n
	}
	return nil
}
