package core

import (
	"errors"
	"io"
)

// ReadAt reads plaintext like os.File.ReadAt (io.EOF at or past the end).
// A chunk that fails authentication yields an error wrapping
// content.ErrCorruptChunk and no bytes of that chunk.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, ErrInvalid
	}
	if err := f.rooted.ensureRoots(); err != nil {
		return 0, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
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
	if err := f.readLocked(p[:want], off); err != nil {
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

// readLocked fills p (non-empty, inside the file) from offset off: one
// backing read for the whole run of chunks, then the chunks are opened,
// in parallel for large requests. Full chunks are decrypted straight into p.
func (f *File) readLocked(p []byte, off int64) error {
	e := f.e
	cs := int64(e.chunkSize)
	first := uint64(off / cs)
	last := uint64((off + int64(len(p)) - 1) / cs)
	fileLast := f.lastIndex()

	// The cached last chunk needs neither I/O nor decryption.
	readLast := last
	if last == fileLast && f.tailOK {
		start := int64(last) * cs
		from := max(off, start)
		copy(p[from-off:], (*f.tail)[from-start:])
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
		wLast = e.lay.runEnd(wFirst, min(wFirst+win-1, readLast))
		start = e.cipherOffset(wFirst)
		end = e.cipherOffset(wLast) + int64(e.plainLen(wLast, f.size)+e.overhead)
		return wLast, start, end
	}
	windowBytes := int(min(readLast-first+1, win)) * e.cipherChunk
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
	stored   []byte // the stored chunks of the run, back to back
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
		pos := k * e.cipherChunk
		stored := j.stored[pos : pos+plainLen+e.overhead]
		final := i == j.fileLast
		if plainStart >= j.off && plainStart+int64(plainLen) <= reqEnd {
			// Whole chunk wanted: decrypt in place; the capacity limit keeps
			// the cipher from touching the neighbouring chunk's bytes.
			at := int(plainStart - j.off)
			if _, err := f.openChunk(j.p[at:at:at+plainLen], stored, i, final, j.sparse); err != nil {
				return err
			}
			continue
		}
		buf := e.bufs.get(e.chunkSize)
		plain, err := f.openChunk((*buf)[:0], stored, i, final, j.sparse)
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
