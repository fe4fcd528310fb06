package reversefs

import (
	"context"
	"io"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ErrChanged: a plaintext file got shorter while it was open (see
// engine.ErrChanged, which reads return).
var ErrChanged = engine.ErrChanged

// Open opens a regular file (the plaintext, read-only) or a virtual file.
// Any write access fails with EROFS.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
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
	case n.kind.Virtual():
		data, err := n.r.v.Content(n.kind, n.rel)
		if err != nil {
			return nil, 0, n.r.errno(err, "open", n.rel)
		}
		return &virtHandle{data: data}, 0, 0
	}
	return nil, 0, syscall.EINVAL
}

// fileHandle is an open plaintext file shown encrypted: the engine's
// reverse file over the plaintext. Its size is taken once at open (see
// engine.ReverseFile), and Getattr reports through it.
type fileHandle struct {
	r   *Root
	rel string
	f   *engine.ReverseFile
}

// openFile opens the plaintext file rel without following symlinks and
// prepares its sealing.
func (r *Root) openFile(rel string) (*fileHandle, error) {
	f, err := r.v.OpenFile(rel)
	if err != nil {
		return nil, err
	}
	return &fileHandle{r: r, rel: rel, f: f}, nil
}

// Read returns the requested range of the stored form; the engine seals
// the chunks it covers.
func (h *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off < 0 {
		return fuse.ReadResultData(nil), 0
	}
	n, err := h.f.ReadAt(dest, off)
	if err != nil && err != io.EOF {
		return nil, h.r.errno(err, "read", h.rel)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// fill writes ciphertext bytes [off, off+len(out)) into out; the range must
// lie inside the file (tests and the benchmark call it directly).
func (h *fileHandle) fill(out []byte, off int64) error {
	n, err := h.f.ReadAt(out, off)
	if err == io.EOF && n == len(out) {
		err = nil
	}
	return err
}

// Release closes the plaintext file.
func (h *fileHandle) Release(ctx context.Context) syscall.Errno {
	return h.r.errno(h.f.Close(), "release", h.rel)
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
	_ fs.NodeOpener   = (*node)(nil)
	_ fs.FileReader   = (*fileHandle)(nil)
	_ fs.FileReleaser = (*fileHandle)(nil)
	_ fs.FileReader   = (*virtHandle)(nil)
)
