package fileengine

import (
	"fmt"
	"io"
	"math"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// WriteAt writes plaintext like os.File.WriteAt, growing the file as needed;
// whole chunks skipped by a write past the end become holes.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || int64(len(p)) > math.MaxInt64-off {
		return 0, ErrInvalid
	}
	if len(p) > 0 && off+int64(len(p)) > f.e.lay.maxSize {
		return 0, ErrTooLarge
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := f.writeLocked(p, off, max(f.size, off+int64(len(p)))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeLocked stores p at off and makes the file newSize bytes long
// (newSize >= f.size, newSize >= off+len(p), newSize > 0). With an empty p it
// only grows the file: Truncate uses it that way. Caller holds mu for writing.
//
// planWrite decides which chunks are re-sealed, merged, reserved and left
// as holes, and whether SPARSE is set; this executor carries the plan out in
// the crash order of the package comment: reserve, header, the old last
// chunk when holes separate it, then the run.
func (f *File) writeLocked(p []byte, off, newSize int64) error {
	e := f.e
	oldSize := f.size
	pl, err := planWrite(e.lay, oldSize, f.hasHeader, f.holes.sparse(), off, int64(len(p)), newSize)
	if err != nil {
		return err
	}
	hold := false // the backing write is held for the end of this call (held.go)
	// A growing write that fails is undone (undoGrow), for which the old
	// last chunk's plaintext must be at hand in the tail cache.
	if pl.growing && oldSize > 0 && !f.tail.ok {
		buf := e.bufs.get(e.chunkSize)
		if plain, err := f.reads.chunkPlain((*buf)[:0], pl.oldLast); err == nil {
			f.tail.set(plain)
		}
		e.bufs.put(buf)
	}
	if err := f.space.reserveGrowth(pl.reserveFrom, pl.reserveTo, oldSize); err != nil {
		return err
	}
	hadHeader, oldHdr := f.hasHeader, f.hdr
	var head *content.Header // the DIRTY header stored with chunk 0, if any
	if f.rooted.newWithChunk0(&pl) {
		err = f.rooted.newUnwritten()
		h := f.hdr
		head = &h
		hold = f.holdsFirst(&pl)
	} else {
		err = f.prepareDataHeader(pl.setSparse)
	}
	if err != nil {
		return err
	}
	dirty, err := f.rooted.markDirtyWith(f.rooted.withChunk0(&pl))
	if err != nil {
		return err
	}
	if dirty != nil {
		head = dirty
	}
	f.zeroHoleEntries(&pl)
	if err := f.store(&pl, p, off, newSize, head, hold); err != nil {
		if f.held != nil {
			f.dropHeld() // never written: the undo below empties the file
		}
		if dirty != nil && f.hdr.Flags&content.FlagDirty == 0 {
			f.rooted.dirtyAlone(*dirty) // the write that was to carry it failed
		}
		f.holes.forgetHoles(0)
		f.e.roots.distrust(f) // entries may be ahead of the chunks: rebuilt before the clean header
		if !pl.growing {
			f.afterFailedWrite()
		} else if f.undoGrow(oldSize, hadHeader) && pl.setSparse && hadHeader {
			f.restoreHeader(oldHdr)
		}
		return err
	}
	f.size = newSize
	err = f.holes.afterWrite(&pl)
	if herr := f.writeHeldClean(); err == nil {
		err = herr
	}
	return err
}

// store seals and writes the chunks of plan pl for p at off, and caches the
// new last chunk when the write sealed it. head, if not nil, is the DIRTY
// header to store in the backing write of chunk 0, right before it
// (fileRoots.newWithChunk0, markDirtyWith). hold: the write of chunk 0
// is held for the end of the call (held.go: holdsFirst).
func (f *File) store(pl *writePlan, p []byte, off, newSize int64, head *content.Header, hold bool) error {
	e := f.e
	oldSize := f.size
	job := e.sealJobs.Get().(*sealJob)
	defer job.release()
	*job = sealJob{f: f, p: p, off: off, newSize: newSize, newLast: pl.newLast, head: head, hold: hold}
	if pl.resealOld {
		if err := job.addMerged(pl.oldLast, oldSize); err != nil {
			return err
		}
	}
	if pl.mergeFirst {
		if err := job.addMerged(pl.first, oldSize); err != nil {
			return err
		}
	}
	if pl.mergeLast {
		if err := job.addMerged(pl.last, oldSize); err != nil {
			return err
		}
	}

	count := int(pl.last-pl.runStart) + 1
	total := count
	if pl.separate {
		total++
	}
	// All nonces of the request in one read from the random source.
	// Why safe: random 128-bit (GCM, SIV) or 192-bit (XChaCha) nonces under a
	// per-file key; collisions are negligible far beyond any file's chunk count.
	nonces := e.bufs.get(total * e.nonceSize)
	defer e.bufs.put(nonces)
	if _, err := io.ReadFull(e.rand, *nonces); err != nil {
		return fmt.Errorf("core: random nonces: %w", err)
	}
	if pl.separate {
		// Old last chunk first: a crash before the new tail is written
		// leaves a file ending in a final=0 chunk, which fails to open.
		if err := job.sealAndWrite(pl.oldLast, 1, (*nonces)[count*e.nonceSize:]); err != nil {
			return err
		}
	}
	if err := job.sealAndWrite(pl.runStart, count, (*nonces)[:count*e.nonceSize]); err != nil {
		return err
	}
	if pl.last == pl.newLast {
		f.tail.set(job.plain(pl.newLast))
	}
	return nil
}

// mergedChunk is a chunk whose new plaintext is assembled in a pooled buffer.
type mergedChunk struct {
	index uint64
	buf   *[]byte
	plain []byte
}

// sealJob seals a run of chunks for one write request.
type sealJob struct {
	f       *File
	p       []byte // the caller's data, at plaintext offset off
	off     int64
	newSize int64
	newLast uint64

	merged  [3]mergedChunk // at most: re-sealed old last, first edge, last edge
	nmerged int

	// head: the DIRTY header written with chunk 0, in the same backing
	// write, right before it (compact layout: chunk 0 follows the header).
	head *content.Header
	// hold: the backing write of chunk 0 is held for the settle at the
	// end of the call (held.go).
	hold bool

	// The run being sealed by work.
	runFirst uint64
	stored   []byte
	nonces   []byte
}

// addMerged builds chunk i's new plaintext: the old plaintext (if the old
// file of oldSize bytes had any there), zeros up to the new chunk length,
// then the bytes of p that fall into the chunk.
func (j *sealJob) addMerged(i uint64, oldSize int64) error {
	e := j.f.e
	cs := int64(e.chunkSize)
	start := int64(i) * cs
	n := e.plainLen(i, j.newSize)
	buf := e.bufs.get(e.chunkSize)
	m := &j.merged[j.nmerged]
	*m = mergedChunk{index: i, buf: buf}
	j.nmerged++
	plain := (*buf)[:0]
	if start < oldSize {
		var err error
		if plain, err = j.f.reads.chunkPlain(plain, i); err != nil {
			return err
		}
	}
	old := len(plain)
	plain = plain[:n]
	clear(plain[old:])
	if from, to := max(j.off, start), min(j.off+int64(len(j.p)), start+int64(n)); from < to {
		copy(plain[from-start:to-start], j.p[from-j.off:to-j.off])
	}
	m.plain = plain
	return nil
}

// plain returns chunk i's new plaintext.
func (j *sealJob) plain(i uint64) []byte {
	for k := range j.nmerged {
		if j.merged[k].index == i {
			return j.merged[k].plain
		}
	}
	start := int64(i)*int64(j.f.e.chunkSize) - j.off
	return j.p[start : start+int64(j.f.e.plainLen(i, j.newSize))]
}

// sealAndWrite seals chunks [first, first+count) and writes them with one
// backing write per window (one for any request up to 1 MiB); windows go in
// increasing offset order, so an interrupted multi-window append still ends
// in a chunk sealed with final=0.
//
// With the bulk path on, a multi-window request is pipelined: the backing
// write of window k runs while window k+1 is sealed, into the other of two
// buffers. At most one write is in flight and each starts only after the
// previous one finished, so the offset order (and the crash argument above)
// is unchanged; the serial copy into the backing file no longer caps the
// parallel speed-up.
func (j *sealJob) sealAndWrite(first uint64, count int, nonces []byte) error {
	e := j.f.e
	windowBytes := min(count, e.windowChunks)*e.cipherChunk + int(e.lay.readGaps)
	head := 0 // room for the header before chunk 0 (withHeader)
	if j.head != nil && first == 0 {
		head = int(e.lay.header)
		windowBytes += head
	}
	bufs := [2]*[]byte{e.bufs.get(windowBytes)}
	defer e.bufs.put(bufs[0])
	pipelined := e.parallel && count > e.windowChunks && head == 0
	if pipelined {
		bufs[1] = e.bufs.get(windowBytes)
		defer e.bufs.put(bufs[1])
	}
	var inflight chan error
	wait := func() error {
		if inflight == nil {
			return nil
		}
		err := <-inflight
		inflight = nil
		return err
	}
	for w, done, n := 0, 0, 0; done < count; w, done = w+1, done+n {
		wFirst := first + uint64(done)
		// A window is stored back to back: with tag blocks, inside one
		// group; unpipelined, in a compact layout, across the pieces of
		// tag block 0 too, written from the table (withPieces).
		wLast := wFirst + uint64(min(e.windowChunks, count-done)-1)
		if pipelined {
			wLast = e.lay.runEnd(wFirst, wLast)
		} else {
			wLast = e.lay.readEnd(wFirst, wLast)
		}
		n = int(wLast-wFirst) + 1
		size := int(e.cipherOffset(wLast)-e.cipherOffset(wFirst)) + e.plainLen(wLast, j.newSize) + e.overhead
		buf := bufs[0]
		if pipelined {
			buf = bufs[w%2]
		}
		at0 := 0
		if wFirst == 0 {
			at0 = head
		}
		j.runFirst, j.stored = wFirst, (*buf)[at0:at0+size]
		j.nonces = nonces[done*e.nonceSize : (done+n)*e.nonceSize]
		if rs := j.f.rt; rs != nil {
			rs.tags.blockFor(wFirst, wLast) // the workers fill these entries
		}
		if err := e.forChunks(n, j); err != nil {
			wait() // the buffers go back to the pool only when no write uses them
			return err
		}
		if err := wait(); err != nil {
			return err
		}
		stored, at := j.stored, e.cipherOffset(wFirst)
		// With roots, the window's tag entries are stored later, all at
		// once, before the clean header (fileRoots.saveEntries, at fsync
		// or the last close): until then the header is DIRTY (markDirty)
		// and the file reads with v1's rules, which never look at the
		// stored entries, so a write pays no entry write of its own (one
		// or two 16-byte pwrites per write of a small file, one per
		// window of a large one).
		if rs := j.f.rt; rs != nil {
			rs.tags.markUnsaved(wFirst, wLast)
		}
		if !pipelined {
			pieces := j.withPieces(wFirst, wLast)
			if at0 > 0 {
				// The header goes right before chunk 0 (cipherOffset(0) is
				// the header's size in a compact layout).
				stored, at = (*buf)[:at0+size], 0
			}
			// A held write gets its header when it is made: the clean one
			// (finalize), or this DIRTY one if the settle fails
			// (flushHeld). Marshaled here it would cost a MAC per small
			// file that no one reads.
			held := j.hold && wFirst == 0 && wLast == 0 && j.f.holdWrite(stored, at)
			if !held {
				if at0 > 0 {
					if err := e.suite.PutHeader((*buf)[:at0], *j.head); err != nil {
						return err
					}
				}
				if err := writeFullAt(j.f.b, stored, at); err != nil {
					return err
				}
			}
			if at0 > 0 {
				j.f.rooted.headerStored(*j.head, held)
			}
			if rs := j.f.rt; rs != nil {
				rs.tags.savedPieces(pieces)
			}
			continue
		}
		inflight = make(chan error, 1)
		go func(done chan<- error) {
			done <- writeFullAt(j.f.b, stored, at)
		}(inflight)
	}
	return wait()
}

// withPieces fills, in the stored bytes of window [first, last], the
// pieces of tag block 0 that lie between its chunks (compact layout:
// piece A after chunk 0, piece B after chunk content.CompactHeadEntries-1)
// with their entries from the table, the window's own just sealed, and
// reports which it filled (pieceA, pieceB bits). So a write across them
// is one pwrite, and stores their entries as well.
func (j *sealJob) withPieces(first, last uint64) (pieces uint8) {
	f := j.f
	e, rs := f.e, f.rt
	if rs == nil || !e.lay.compact || first >= content.CompactHeadEntries || last == first {
		return 0
	}
	at := e.cipherOffset(first)
	fill := func(i, from, to uint64) { // the gap after chunk i: entries [from, to]
		gap := j.stored[e.cipherOffset(i)+int64(e.cipherChunk)-at : e.cipherOffset(i+1)-at]
		copy(gap, rs.tags.entries(from, to, e.zeroStore))
	}
	if first == 0 {
		fill(0, 0, e.lay.pieceAEnd)
		pieces |= pieceA
	}
	if last >= content.CompactHeadEntries {
		fill(content.CompactHeadEntries-1, content.CompactHeadEntries, content.TagEntries-1)
		pieces |= pieceB
	}
	return pieces
}

// work seals run positions [lo, hi) into j.stored.
func (j *sealJob) work(lo, hi int) error {
	e := j.f.e
	ns := e.nonceSize
	for k := lo; k < hi; k++ {
		i := j.runFirst + uint64(k)
		plain := j.plain(i)
		pos := int(e.cipherOffset(i) - e.cipherOffset(j.runFirst)) // past the pieces in the window (withPieces)
		n := len(plain) + e.overhead
		// The capacity limit keeps Seal inside this chunk's slot.
		out := j.f.fc.Seal(j.stored[pos:pos:pos+n], plain, i, i == j.newLast, j.nonces[k*ns:(k+1)*ns])
		if len(out) != n {
			panic(fmt.Sprintf("core: sealed chunk is %d bytes, want %d", len(out), n))
		}
		if rs := j.f.rt; rs != nil {
			rs.tags.set(i, j.f.fc.ChunkTag(out)) // distinct i per worker: disjoint entries
		}
	}
	return nil
}

// release returns the job's buffers and the job to the engine's pools.
func (j *sealJob) release() {
	if j.f == nil {
		return
	}
	e := j.f.e
	for k := range j.nmerged {
		e.bufs.put(j.merged[k].buf)
	}
	*j = sealJob{}
	e.sealJobs.Put(j)
}

// zeroHoleEntries prepares the tag entries of a file with roots for a
// write planned by pl: zero entries for the chunks the write leaves as
// holes. Only in memory: holes are made past the old end, where the stored
// entries are zero already (entries past the last chunk are kept zero:
// cutTo, rebuildEntries), or in new tag blocks past the end of the backing
// file. The chunks up to newSize need no room: a block not in the table is
// zeros (tags.go), so a hole of any size costs nothing here.
func (f *File) zeroHoleEntries(pl *writePlan) {
	if rs := f.rt; rs != nil {
		rs.tags.clear(pl.holesFrom, pl.holesTo)
	}
}
