package transport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// panicRoot has "hello" and "bad", whose READ returns a ReadResult that
// panics when go-fuse asks it for its bytes: after go-fuse's own recover.
type panicRoot struct{ fs.Inode }

func (r *panicRoot) OnAdd(ctx context.Context) {
	hello := r.NewPersistentInode(ctx, &fs.MemRegularFile{Data: []byte("hi"), Attr: fuse.Attr{Mode: 0o644}}, fs.StableAttr{})
	r.AddChild("hello", hello, false)
	r.AddChild("bad", r.NewPersistentInode(ctx, &panicFile{}, fs.StableAttr{}), false)
}

type panicFile struct{ fs.Inode }

func (f *panicFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode, out.Size = 0o644, 4
	return 0
}

func (f *panicFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (f *panicFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return panicResult{}, 0
}

// panicResult is a ReadResult whose Bytes panics (as a lazy result that
// decrypts on demand might, on a bug).
type panicResult struct{}

func (panicResult) Bytes([]byte) ([]byte, fuse.Status) {
	panic("test: planted panic in ReadResult.Bytes")
}
func (panicResult) Size() int { return 4 }
func (panicResult) Done()     {}

// TestPanicInReadResult: a panic in a ReadResult, which go-fuse's recover
// does not cover, is answered with EIO and logged with its stack once, and
// the mount goes on serving, on the classic workers and on the rings. Without
// serveRequest the panic ends the test binary.
func TestPanicInReadResult(t *testing.T) {
	for _, mode := range []Mode{Classic, URing} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == URing {
				requireURing(t)
			}
			var mu sync.Mutex
			var logged []string
			logf := func(f string, a ...any) {
				mu.Lock()
				defer mu.Unlock()
				logged = append(logged, fmt.Sprintf(f, a...))
			}
			m, mnt, err := mountRoot(t, &panicRoot{}, Options{Mode: mode, Logf: logf})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[Mode]string{Classic: "classic", URing: "io_uring"}[mode]; m.Transport != want {
				t.Fatalf("transport %q (%s)", m.Transport, m.Why)
			}
			const reads = 3
			for i := range reads {
				_, err := os.ReadFile(filepath.Join(mnt, "bad"))
				if !errors.Is(err, syscall.EIO) {
					t.Fatalf("read %d of bad: %v, want EIO", i, err)
				}
				if got := readWithin(t, filepath.Join(mnt, "hello")); got != "hi" {
					t.Fatalf("read of hello after panic %d: %q", i, got)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			var panics int
			for _, l := range logged {
				if strings.Contains(l, "test: planted panic in ReadResult.Bytes") {
					panics++
					if !strings.Contains(l, "recover_test.go") {
						t.Errorf("panic logged without its stack: %q", l)
					}
				}
			}
			// One READ each (direct I/O; the kernel does not retry a
			// READ that failed with EIO).
			if panics != reads {
				t.Errorf("%d reads, %d panics logged:\n%s", reads, panics, strings.Join(logged, "\n"))
			}
		})
	}
}
