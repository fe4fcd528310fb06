package fileengine

import (
	"errors"
	"io"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// ReadAt reads plaintext like os.File.ReadAt (io.EOF at or past the end).
// A chunk that fails authentication yields an error wrapping
// content.ErrCorruptChunk and no bytes of that chunk.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, ErrInvalid
	}
	if n, done, err := f.rooted.firstRead(p, off); done {
		return n, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.reads.readAt(p, off, nil)
}

// readAt is ReadAt with mu held (for reading, or for writing by
// fileRoots.firstRead) and the roots loaded, or loaded by loaded
// (readLocked) before any chunk is opened.
func (rd fileReads) readAt(p []byte, off int64, loaded func(run storedRun) error) (int, error) {
	f := rd.f
	if f.closed {
		return 0, ErrClosed
	}
	if off >= f.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := len(p)
	if int64(want) > f.size-off {
		want = int(f.size - off)
	}
	if want == 0 {
		return 0, nil
	}
	if err := rd.readLocked(p[:want], off, loaded); err != nil {
		// Deliver the chunks before the first bad one and nothing else:
		// clear the rest so no unauthenticated byte reaches the caller.
		n := 0
		var ce *ChunkError
		if errors.As(err, &ce) && ce.Offset > off {
			n = int(min(ce.Offset-off, int64(want)))
		}
		clear(p[n:])
		return n, err
	}
	if want < len(p) {
		return want, io.EOF
	}
	return want, nil
}

// fileReads is the read side of a File: it owns the rule that no
// plaintext leaves the File unauthenticated. Each stored chunk is opened
// by its AEAD and, with trusted roots, checked against its tag entry
// first; an all-zero chunk reads as zeros only where the hole rule
// (fileHoles.v1Holes) allows. It holds no state of its own.
type fileReads struct{ f *File }

// readLocked fills p (non-empty, inside the file) from offset off: one
// backing read for the whole run of chunks, then the chunks are opened,
// in parallel for large requests. Full chunks are decrypted straight into p.
// If loaded is not nil it is called with the first window's stored bytes
// once they are read, before any chunk is opened (fileRoots.firstRead:
// the roots are loaded from them), and an error from it ends the read.
func (rd fileReads) readLocked(p []byte, off int64, loaded func(run storedRun) error) error {
	f := rd.f
	e := f.e
	cs := int64(e.chunkSize)
	first := uint64(off / cs)
	last := uint64((off + int64(len(p)) - 1) / cs)
	fileLast := f.lastIndex()

	// The cached last chunk needs neither I/O nor decryption (when the
	// roots are loaded from the read, the window is read all the same).
	readLast := last
	if last == fileLast && f.tail.ok && loaded == nil {
		start := int64(last) * cs
		from := max(off, start)
		copy(p[from-off:], (*f.tail.buf)[from-start:])
		if last == first {
			return nil
		}
		readLast = last - 1
	}

	// One backing read per window of chunks (a whole request up to 1 MiB,
	// so one per FUSE request); larger requests go window by window so the
	// stored bytes are still in cache when they are opened. With the bulk
	// path on, the read of window k+1 runs while window k is opened, into
	// the other of two buffers, so the serial copy out of the backing file
	// does not cap the parallel speed-up.
	win := uint64(e.windowChunks)
	window := func(wFirst uint64) (wLast uint64, start, end int64) {
		wLast = e.lay.readEnd(wFirst, min(wFirst+win-1, readLast))
		start = e.cipherOffset(wFirst)
		end = e.cipherOffset(wLast) + int64(e.plainLen(wLast, f.size)+e.overhead)
		return wLast, start, end
	}
	windowBytes := int(min(readLast-first+1, win))*e.cipherChunk + int(e.lay.readGaps)
	bufs := [2]*[]byte{e.bufs.get(windowBytes)}
	defer e.bufs.put(bufs[0])
	pipelined := e.parallel && readLast-first+1 > win
	if pipelined {
		bufs[1] = e.bufs.get(windowBytes)
		defer e.bufs.put(bufs[1])
	}
	var prefetch chan error // the read of the next window, if started
	defer func() {
		if prefetch != nil {
			<-prefetch // the buffers go back to the pool only when no read uses them
		}
	}()
	job := e.openJobs.Get().(*openJob)
	defer e.openJobs.Put(job)
	for w, wFirst := 0, first; wFirst <= readLast; w++ {
		wLast, start, end := window(wFirst)
		slot := 0
		if pipelined {
			slot = w % 2
		}
		buf := (*bufs[slot])[:end-start]
		var err error
		if prefetch != nil {
			err = <-prefetch
			prefetch = nil
		} else {
			err = readFullAt(f.b, buf, start)
		}
		if err != nil {
			*job = openJob{}
			return &ChunkError{Index: wFirst, Offset: int64(wFirst) * cs, Err: err}
		}
		if loaded != nil {
			err, loaded = loaded(storedRun{start: start, buf: buf}), nil
			if err != nil {
				*job = openJob{}
				return err
			}
		}
		if next := wLast + 1; pipelined && next <= readLast {
			_, nStart, nEnd := window(next)
			nbuf := (*bufs[1-slot])[:nEnd-nStart]
			prefetch = make(chan error, 1)
			go func(done chan<- error) { done <- readFullAt(f.b, nbuf, nStart) }(prefetch)
		}
		*job = openJob{f: f, first: wFirst, fileLast: fileLast, sparse: f.holes.v1Holes(), stored: buf, p: p, off: off}
		err = e.forChunks(int(wLast-wFirst+1), job)
		*job = openJob{}
		if err != nil {
			return err
		}
		wFirst = wLast + 1
	}
	return nil
}

// openJob opens a run of stored chunks into a read request.
type openJob struct {
	f        *File
	first    uint64 // chunk index of run position 0
	fileLast uint64
	sparse   bool
	stored   []byte // the stored bytes of the run, from its first chunk to its last
	p        []byte // destination: plaintext bytes [off, off+len(p))
	off      int64
}

// work opens run positions [lo, hi); it stops at the first bad chunk.
func (j *openJob) work(lo, hi int) error {
	f, e := j.f, j.f.e
	cs := int64(e.chunkSize)
	reqEnd := j.off + int64(len(j.p))
	for k := lo; k < hi; k++ {
		i := j.first + uint64(k)
		plainStart := int64(i) * cs
		plainLen := e.plainLen(i, f.size)
		pos := int(e.cipherOffset(i) - e.cipherOffset(j.first)) // past the pieces of tag block 0 in the run (readEnd)
		stored := j.stored[pos : pos+plainLen+e.overhead]
		final := i == j.fileLast
		if plainStart >= j.off && plainStart+int64(plainLen) <= reqEnd {
			// Whole chunk wanted: decrypt in place; the capacity limit keeps
			// the cipher from touching the neighbouring chunk's bytes.
			at := int(plainStart - j.off)
			if _, err := f.reads.openChunk(j.p[at:at:at+plainLen], stored, i, final, j.sparse); err != nil {
				return err
			}
			continue
		}
		buf := e.bufs.get(e.chunkSize)
		plain, err := f.reads.openChunk((*buf)[:0], stored, i, final, j.sparse)
		if err == nil {
			from := max(j.off, plainStart)
			to := min(reqEnd, plainStart+int64(plainLen))
			copy(j.p[from-j.off:to-j.off], plain[from-plainStart:])
		}
		e.bufs.put(buf)
		if err != nil {
			return err
		}
	}
	return nil
}

// openChunk authenticates stored chunk i and appends its plaintext to dst,
// applying the hole rule: an all-zero, full-size, non-final stored chunk in
// a SPARSE file is ChunkSize zero bytes. Any other all-zero chunk goes to
// Open and fails there (ErrCorruptChunk).
func (rd fileReads) openChunk(dst, stored []byte, i uint64, final, sparse bool) ([]byte, error) {
	f := rd.f
	e := f.e
	if f.rt != nil && f.rt.trusted {
		hole, err := f.rooted.checkEntry(stored, i, final)
		if err != nil {
			return dst, &ChunkError{Index: i, Offset: int64(i) * int64(e.chunkSize), Err: err}
		}
		if hole {
			return append(dst, e.zeroPlain...), nil
		}
		sparse = false
	}
	if sparse && !final && len(stored) == e.cipherChunk && content.IsHole(stored) {
		return append(dst, e.zeroPlain...), nil
	}
	out, err := f.fc.Open(dst, stored, i, final)
	if err != nil {
		return dst, &ChunkError{Index: i, Offset: int64(i) * int64(e.chunkSize), Err: err}
	}
	return out, nil
}

// chunkPlain appends the current plaintext of chunk i (i <= lastIndex) to
// dst, from the tail cache when it is the last chunk and cached, else by
// reading and opening it.
func (rd fileReads) chunkPlain(dst []byte, i uint64) ([]byte, error) {
	f := rd.f
	e := f.e
	last := f.lastIndex()
	if i == last && f.tail.ok {
		return append(dst, *f.tail.buf...), nil
	}
	n := e.plainLen(i, f.size) + e.overhead
	buf := e.bufs.get(n)
	defer e.bufs.put(buf)
	if err := readFullAt(f.b, *buf, e.cipherOffset(i)); err != nil {
		return dst, &ChunkError{Index: i, Offset: int64(i) * int64(e.chunkSize), Err: err}
	}
	return rd.openChunk(dst, *buf, i, i == last, f.holes.v1Holes())
}
