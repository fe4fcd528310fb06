package forwardfs

import (
	"bytes"
	"context"
	"math"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/session"
)

// TestAllocateOverflow calls Allocate directly, since the kernel refuses
// an offset plus length beyond its largest file itself: mode 0 with a
// range whose end wraps past 2^64, or lies beyond the largest file, is
// EFBIG; it used to wrap to a small or negative size and answer success.
func TestAllocateOverflow(t *testing.T) {
	dir := t.TempDir()
	p := config.Params{FormatVersion: 1, Cipher: "aes-256-gcm", ChunkSize: 4096}
	s, err := session.New(dir, p, bytes.Repeat([]byte{9}, 32), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fd, err := backing.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tree().DirIDs().InitRoot(fd); err != nil {
		t.Fatal(err)
	}
	backing.Close(fd)
	r, err := NewRoot(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	root, err := s.Vault().Root()
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	name, err := root.NewName("f")
	if err != nil {
		t.Fatal(err)
	}
	cf, err := root.Create(name, 0, 0o644, engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Release()
	h := &handle{n: &r.node, of: cf}
	for _, c := range []struct{ off, size uint64 }{
		{math.MaxUint64 - 10, 100}, // the sum wraps to 89
		{1 << 63, 1 << 63},         // wraps to 0
		{math.MaxInt64 - 10, 100},  // negative as an int64
		{uint64(s.Engine().Suite().MaxPlainSize()), 1},
	} {
		for _, mode := range []uint32{0, 1 /* FALLOC_FL_KEEP_SIZE */} {
			if errno := h.Allocate(context.Background(), c.off, c.size, mode); errno != syscall.EFBIG {
				t.Errorf("Allocate(%d, %d, mode %d) = %v, want EFBIG", c.off, c.size, mode, errno)
			}
		}
	}
	if size, err := cf.Size(); err != nil || size != 0 {
		t.Fatalf("size %d, %v after refused allocations", size, err)
	}
}
