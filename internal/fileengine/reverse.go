package fileengine

import (
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// Errors of reverse files.
var (
	// ErrChanged: a plaintext file got shorter while it was open, so the
	// ciphertext promised by its size can no longer be produced. Reads fail
	// rather than invent bytes; the backup tool reports the file.
	ErrChanged = errors.New("core: plaintext file shrank while open")
	// ErrNotSIV: reverse files need aes-256-siv, because their nonces are
	// derived and repeat when a file changes.
	ErrNotSIV = errors.New("core: reverse files need aes-256-siv")
)

// ChunkNonces gives the stored nonce of chunk index of file id in reverse
// mode. internal/crypto/reverse.Deriver is the implementation; the engine
// takes an interface so that it does not depend on how nonces are derived.
type ChunkNonces interface {
	ChunkNonce(id content.FileID, index uint64) []byte
}

// ReverseFile is the stored (forward-format) form of a plaintext file,
// computed on the fly: the header with the file's ID and no flags, then
// every chunk sealed with its derived nonce. A copy of its bytes opens as
// an ordinary encrypted file (docs/reverse.md). It is read-only and safe
// for concurrent use.
//
// Its size is fixed when it is opened: the ciphertext (and the final flag
// of its last chunk) follows that size even if the plaintext grows, and a
// read that finds the plaintext shorter fails with ErrChanged.
type ReverseFile struct {
	e      *Engine
	src    io.ReaderAt // the plaintext
	size   int64       // plaintext size at open
	id     content.FileID
	fc     *content.FileCipher
	nonces ChunkNonces
	header []byte
	edges  edgeCache
}

// OpenReverse prepares the stored form of the plaintext src of size bytes
// with file ID id. The caller keeps ownership of src and closes it after
// the last read.
//
// Why this is safe only with aes-256-siv: the nonces are a function of the
// file ID and chunk index, so a file that changes at the same path seals
// new plaintext under an old nonce. SIV is misuse resistant: that reveals
// only whether the chunk is unchanged (docs/reverse.md), where a nonce
// reuse in GCM or ChaCha20-Poly1305 would reveal the plaintexts' XOR.
func (e *Engine) OpenReverse(src io.ReaderAt, size int64, id content.FileID, nonces ChunkNonces) (*ReverseFile, error) {
	if e.suite.Algorithm() != content.AES256SIV {
		return nil, fmt.Errorf("%w (the suite is %s)", ErrNotSIV, e.suite.Algorithm())
	}
	if size < 0 {
		return nil, ErrInvalid
	}
	fc, err := e.suite.File(id)
	if err != nil {
		return nil, fmt.Errorf("core: file key: %w", err)
	}
	// Header flags 0: a reverse file never has holes (every chunk is sealed).
	hdr := e.suite.MarshalHeader(content.Header{FileID: id})
	return &ReverseFile{e: e, src: src, size: size, id: id, fc: fc, nonces: nonces, header: hdr}, nil
}

// Size returns the stored size: the header plus the sealed chunks.
func (r *ReverseFile) Size() int64 { return r.e.suite.CipherSize(r.size) }

// ReadAt reads stored bytes like io.ReaderAt: io.EOF at or past the end,
// with the bytes before it when a read crosses the end.
func (r *ReverseFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, ErrInvalid
	}
	total := r.Size()
	if off >= total {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), total-off))
	if err := r.fill(p[:n], off); err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fill writes stored bytes [off, off+len(out)) into out; the range is
// inside the file. The chunks it covers are sealed on the engine's worker
// pool for large requests (forChunks), like forward reads and writes.
func (r *ReverseFile) fill(out []byte, off int64) error {
	end := off + int64(len(out))
	if off < content.HeaderSize {
		copy(out, r.header[off:min(content.HeaderSize, end)])
	}
	if end <= content.HeaderSize {
		return nil
	}
	ccs := int64(r.e.cipherChunk)
	first := uint64((max(off, content.HeaderSize) - content.HeaderSize) / ccs)
	last := uint64((end - 1 - content.HeaderSize) / ccs)
	job := reverseJob{r: r, first: first, out: out, off: off}
	return r.e.forChunks(int(last-first+1), &job)
}

// reverseJob seals a run of chunks into a read request.
type reverseJob struct {
	r     *ReverseFile
	first uint64 // chunk index of run position 0
	out   []byte // destination: stored bytes [off, off+len(out))
	off   int64
}

// work seals run positions [lo, hi) and copies them into the request.
// Whole chunks are sealed straight into out; the chunks at the request's
// edges go through a buffer and the edge cache.
func (j *reverseJob) work(lo, hi int) error {
	r, e := j.r, j.r.e
	plain := e.bufs.get(e.chunkSize)
	defer e.bufs.put(plain)
	end := j.off + int64(len(j.out))
	for k := lo; k < hi; k++ {
		i := j.first + uint64(k)
		start := e.cipherOffset(i)
		n := int64(e.plainLen(i, r.size) + e.overhead)
		if start >= j.off && start+n <= end {
			// The capacity limit keeps Seal inside this chunk's bytes.
			at := start - j.off
			if _, err := r.seal(j.out[at:at:at+n], *plain, i); err != nil {
				return err
			}
			continue
		}
		if err := j.edge(i, start, *plain); err != nil {
			return err
		}
	}
	return nil
}

// edge copies the part of chunk i (stored at start) that the request
// covers, from the edge cache or freshly sealed.
func (j *reverseJob) edge(i uint64, start int64, plain []byte) error {
	e := j.r.e
	buf := e.bufs.get(e.cipherChunk)
	defer e.bufs.put(buf)
	sealed, ok := j.r.edges.get(i, (*buf)[:0])
	if !ok {
		var err error
		if sealed, err = j.r.seal((*buf)[:0], plain, i); err != nil {
			return err
		}
		j.r.edges.put(i, sealed)
	}
	end := j.off + int64(len(j.out))
	lo, hi := max(start, j.off), min(start+int64(len(sealed)), end)
	copy(j.out[lo-j.off:hi-j.off], sealed[lo-start:hi-start])
	return nil
}

// seal reads plaintext chunk i into plain (ChunkSize bytes of room) and
// appends it sealed with its derived nonce to dst.
func (r *ReverseFile) seal(dst, plain []byte, i uint64) ([]byte, error) {
	e := r.e
	pos := int64(i) * int64(e.chunkSize)
	plain = plain[:e.plainLen(i, r.size)]
	n, err := r.src.ReadAt(plain, pos)
	if n < len(plain) {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w (%d bytes missing at offset %d)", ErrChanged, len(plain)-n, pos+int64(n))
		}
		return nil, &ChunkError{Index: i, Offset: pos, Err: err}
	}
	final := int64(i) == (r.size-1)/int64(e.chunkSize)
	return r.fc.Seal(dst, plain, i, final, r.nonces.ChunkNonce(r.id, i)), nil
}
