package reverse

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// ErrChanged: a plaintext file got shorter while it was open, so the
// ciphertext promised by its size can no longer be produced. Reads fail
// (EIO) rather than invent bytes; the backup tool reports the file.
var ErrChanged = errors.New("reverse: plaintext file shrank while open")

// minParallelChunks is the smallest run of chunks a read seals on several
// goroutines; below it the goroutine handoff costs more than it saves.
const minParallelChunks = 4

// chunkBufs are one worker's buffers: a plaintext chunk and a sealed chunk.
type chunkBufs struct{ plain, sealed []byte }

func newChunkBufs(s *content.Suite) *chunkBufs {
	return &chunkBufs{plain: make([]byte, s.ChunkSize()), sealed: make([]byte, 0, s.CipherChunkSize())}
}

// Open opens a regular file (the plaintext, read-only) or a virtual file.
// Any write access fails with EROFS.
func (n *node) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		return nil, 0, syscall.EROFS
	}
	switch {
	case n.kind == kindFile:
		h, err := n.r.openFile(n.rel)
		if err != nil {
			return nil, 0, n.r.errno(err, "open", n.rel)
		}
		return h, 0, 0
	case n.kind.virtual():
		data, err := n.r.virtualData(n.kind, n.rel)
		if err != nil {
			return nil, 0, n.r.errno(err, "open", n.rel)
		}
		return &virtHandle{data: data}, 0, 0
	}
	return nil, 0, syscall.EINVAL
}

// fileHandle is an open plaintext file shown encrypted. Its size is taken
// once at open: the ciphertext (and its final-chunk flag) follows that
// size even if the file grows meanwhile.
type fileHandle struct {
	r      *Root
	rel    string
	fd     int
	size   int64
	id     content.FileID
	fc     *content.FileCipher
	header []byte
	edges  edgeCache
}

// edgeCache keeps the last few sealed chunks that a read used only in
// part. Kernel reads (128 KiB readahead, up to 1 MiB) do not align with
// stored chunks (ChunkSize + 32 bytes), so the chunk at the end of one read
// is needed again at the start of the next; sealing it once saves up to a
// third of the work for sequential reads.
type edgeCache struct {
	mu      sync.Mutex
	next    int
	entries [4]struct {
		valid bool
		index uint64
		data  []byte
	}
}

// get copies cached chunk i into dst and reports whether it was there.
func (c *edgeCache) get(i uint64, dst []byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.valid && e.index == i {
			return append(dst[:0], e.data...), true
		}
	}
	return nil, false
}

// put remembers a copy of sealed chunk i, evicting the oldest entry.
func (c *edgeCache) put(i uint64, sealed []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &c.entries[c.next]
	c.next = (c.next + 1) % len(c.entries)
	e.valid, e.index, e.data = true, i, append(e.data[:0], sealed...)
}

// openFile opens the plaintext file rel without following symlinks and
// prepares its cipher (fileID derived from rel).
func (r *Root) openFile(rel string) (*fileHandle, error) {
	var fd int
	err := r.withParent(rel, func(pfd int, base string) error {
		var err error
		fd, err = backing.Openat(pfd, base, unix.O_RDONLY|unix.O_NOATIME, 0)
		if errors.Is(err, unix.EPERM) { // O_NOATIME needs ownership
			fd, err = backing.Openat(pfd, base, unix.O_RDONLY, 0)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	st, err := backing.Fstat(fd)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		err = syscall.ESTALE // replaced by another type of file
	}
	if err != nil {
		backing.Close(fd)
		return nil, err
	}
	id := r.derive.FileID(rel)
	fc, err := r.suite.File(id)
	if err != nil {
		backing.Close(fd)
		return nil, err
	}
	// Header flags 0: the view never has holes (every chunk is sealed).
	hdr := r.suite.MarshalHeader(content.Header{FileID: id})
	return &fileHandle{r: r, rel: rel, fd: fd, size: st.Size, id: id, fc: fc, header: hdr}, nil
}

// Read computes the requested ciphertext range: header bytes, then every
// overlapping chunk sealed with its derived nonce.
func (h *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	total := h.r.suite.CipherSize(h.size)
	if off < 0 || off >= total || len(dest) == 0 {
		return fuse.ReadResultData(nil), 0
	}
	out := dest[:min(int64(len(dest)), total-off)]
	if err := h.fill(out, off); err != nil {
		return nil, h.r.errno(err, "read", h.rel)
	}
	return fuse.ReadResultData(out), 0
}

// fill writes ciphertext bytes [off, off+len(out)) into out.
func (h *fileHandle) fill(out []byte, off int64) error {
	end := off + int64(len(out))
	if off < content.HeaderSize {
		copy(out, h.header[off:min(content.HeaderSize, end)])
	}
	if end <= content.HeaderSize {
		return nil
	}
	ccs := int64(h.r.suite.CipherChunkSize())
	first := uint64((max(off, content.HeaderSize) - content.HeaderSize) / ccs)
	last := uint64((end - 1 - content.HeaderSize) / ccs)
	count := int(last - first + 1)
	workers := min(runtime.GOMAXPROCS(0), count/minParallelChunks+1)
	if count < minParallelChunks || workers < 2 {
		return h.chunks(out, off, first, last)
	}
	// Disjoint chunk ranges write disjoint parts of out.
	var wg sync.WaitGroup
	errs := make([]error, workers)
	per := (count + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo := first + uint64(w*per)
		if lo > last {
			break
		}
		hi := min(lo+uint64(per)-1, last)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = h.chunks(out, off, lo, hi)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// chunks seals chunks first..last and copies their overlap with
// [off, off+len(out)) into out.
func (h *fileHandle) chunks(out []byte, off int64, first, last uint64) error {
	b := h.r.bufs.Get().(*chunkBufs)
	defer h.r.bufs.Put(b)
	ccs := int64(h.r.suite.CipherChunkSize())
	end := off + int64(len(out))
	for i := first; i <= last; i++ {
		start := content.HeaderSize + int64(i)*ccs
		partial := start < off || start+ccs > end
		sealed, cached := []byte(nil), false
		if partial {
			sealed, cached = h.edges.get(i, b.sealed)
		}
		if !cached {
			var err error
			if sealed, err = h.sealChunk(b, i); err != nil {
				return err
			}
			if partial {
				h.edges.put(i, sealed)
			}
		}
		lo, hi := max(start, off), min(start+int64(len(sealed)), end)
		copy(out[lo-off:hi-off], sealed[lo-start:hi-start])
	}
	return nil
}

// sealChunk reads plaintext chunk i and seals it with the derived nonce;
// the result is in b.sealed.
func (h *fileHandle) sealChunk(b *chunkBufs, i uint64) ([]byte, error) {
	cs := int64(h.r.suite.ChunkSize())
	plain := b.plain[:min(cs, h.size-int64(i)*cs)]
	if err := preadFull(h.fd, plain, int64(i)*cs); err != nil {
		return nil, err
	}
	final := int64(i) == (h.size-1)/cs
	return h.fc.Seal(b.sealed[:0], plain, i, final, h.r.derive.ChunkNonce(h.id, i)), nil
}

// preadFull reads len(p) bytes at off, or fails with ErrChanged at EOF.
func preadFull(fd int, p []byte, off int64) error {
	for len(p) > 0 {
		n, err := unix.Pread(fd, p, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w (%d bytes missing at offset %d)", ErrChanged, len(p), off)
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}

// Release closes the plaintext file.
func (h *fileHandle) Release(ctx context.Context) syscall.Errno {
	return h.r.errno(backing.Close(h.fd), "release", h.rel)
}

// virtHandle is an open virtual file: its content, computed at open.
type virtHandle struct{ data []byte }

// Read copies from the content.
func (v *virtHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off < 0 || off >= int64(len(v.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(v.data[off:min(int64(len(v.data)), off+int64(len(dest)))]), 0
}

var (
	_ fusefs.NodeOpener   = (*node)(nil)
	_ fusefs.FileReader   = (*fileHandle)(nil)
	_ fusefs.FileReleaser = (*fileHandle)(nil)
	_ fusefs.FileReader   = (*virtHandle)(nil)
)
