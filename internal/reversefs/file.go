package reversefs

import (
	"context"
	"errors"
	"io"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// ErrChanged: a plaintext file got shorter while it was open (see
// core.ErrChanged, which reads return).
var ErrChanged = core.ErrChanged

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
	case n.kind.virtual():
		data, err := n.r.virtualData(n.kind, n.rel)
		if err != nil {
			return nil, 0, n.r.errno(err, "open", n.rel)
		}
		return &virtHandle{data: data}, 0, 0
	}
	return nil, 0, syscall.EINVAL
}

// fileHandle is an open plaintext file shown encrypted: the engine's
// reverse file over the plaintext fd. Its size is taken once at open (see
// core.ReverseFile).
type fileHandle struct {
	r    *Root
	rel  string
	size int64 // plaintext size at open, which Getattr reports through
	bf   *backing.File
	rf   *core.ReverseFile
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
	bf := backing.NewFile(fd, &st)
	rf, err := r.engine.OpenReverse(bf, st.Size, r.derive.FileID(rel), r.derive)
	if err != nil {
		bf.Close()
		return nil, err
	}
	return &fileHandle{r: r, rel: rel, size: st.Size, bf: bf, rf: rf}, nil
}

// Read returns the requested range of the stored form; the engine seals
// the chunks it covers.
func (h *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off < 0 {
		return fuse.ReadResultData(nil), 0
	}
	n, err := h.rf.ReadAt(dest, off)
	if err != nil && err != io.EOF {
		return nil, h.r.errno(err, "read", h.rel)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// fill writes ciphertext bytes [off, off+len(out)) into out; the range must
// lie inside the file (tests and the benchmark call it directly).
func (h *fileHandle) fill(out []byte, off int64) error {
	n, err := h.rf.ReadAt(out, off)
	if err == io.EOF && n == len(out) {
		err = nil
	}
	return err
}

// Release closes the plaintext file.
func (h *fileHandle) Release(ctx context.Context) syscall.Errno {
	return h.r.errno(h.bf.Close(), "release", h.rel)
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
