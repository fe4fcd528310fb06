package mounttest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Faults decides, from a seed, which calls of a FaultyDir fail and how:
// while its rate is above zero each call fails with that probability,
// with EIO, ENOSPC, EDQUOT or EINTR, or, for reads and writes, is cut
// short. Calls that change a file in place (write, fsync, fallocate,
// setattr, setxattr) may also fail after doing their work, as a write
// whose writeback error comes back later does; namespace calls (create,
// mkdir, rename, unlink, rmdir) fail before: one that changed the tree
// and then failed is a change behind the mount's back, which is another
// test's subject (docs/shared-storage.md). The same seed and the same sequence of calls give
// the same faults; the kernel's own timing makes the sequence vary a
// little between runs, so a failure names the seed and the injected calls.
type Faults struct {
	mu       sync.Mutex
	r        *rand.Rand
	rate     float64
	injected map[string]int // "op errno" -> count
}

// NewFaults returns faults drawn from seed, off until SetRate.
func NewFaults(seed uint64) *Faults {
	return &Faults{r: rand.New(rand.NewPCG(seed, 0xfa1175)), injected: map[string]int{}}
}

// SetRate sets the probability that a call fails (0 turns faults off).
func (f *Faults) SetRate(p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rate = p
}

// Injected returns how many faults of each kind were handed out.
func (f *Faults) Injected() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.injected)
}

// String lists the injected faults, for failure messages.
func (f *Faults) String() string {
	m := f.Injected()
	var s string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s += fmt.Sprintf("%s:%d ", k, m[k])
	}
	return s
}

// fault is one decision: fail with errno (0: no), before or after the
// call's work; short (0 < short < n): a read or write of n bytes is cut to
// short bytes instead.
type fault struct {
	errno syscall.Errno
	after bool
	short int
}

// draw decides the fate of call op among errnos; n > 1 allows a short
// read or write of n bytes.
func (f *Faults) draw(op string, n int, errnos ...syscall.Errno) fault {
	return f.drawMaybeAfter(op, n, false, errnos...)
}

// drawInPlace is draw for a call that may fail after its work.
func (f *Faults) drawInPlace(op string, n int, errnos ...syscall.Errno) fault {
	return f.drawMaybeAfter(op, n, true, errnos...)
}

func (f *Faults) drawMaybeAfter(op string, n int, mayAfter bool, errnos ...syscall.Errno) fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rate <= 0 || f.r.Float64() >= f.rate {
		return fault{}
	}
	k := f.r.IntN(len(errnos) + 1)
	if k == len(errnos) {
		if n <= 1 {
			return fault{}
		}
		f.injected[op+" short"]++
		return fault{short: 1 + f.r.IntN(n-1)}
	}
	after := mayAfter && f.r.IntN(2) == 0
	when := ""
	if after {
		when = " after"
	}
	f.injected[fmt.Sprintf("%s %v%s", op, errnos[k], when)]++
	return fault{errno: errnos[k], after: after}
}

var (
	ioErrnos    = []syscall.Errno{syscall.EIO, syscall.EINTR}
	spaceErrnos = []syscall.Errno{syscall.EIO, syscall.ENOSPC, syscall.EDQUOT, syscall.EINTR}
)

// FaultyDir mounts a loopback view of a new empty directory whose calls
// fail as faults decides, and returns the view's path (unmounted in
// t.Cleanup; call it before mounting a vault on the view, so that the
// vault is unmounted first). Reads and writes of the view's files go to
// the view's server every time (direct I/O, no passthrough), so every
// backing read and write of a vault on it can fail.
func FaultyDir(t testing.TB, faults *Faults) string {
	t.Helper()
	fstest.RequireFUSE(t)
	under, view := t.TempDir(), t.TempDir()
	root, err := fs.NewLoopbackRoot(under)
	Must(t, err)
	Track(view)
	srv, err := fs.Mount(view, &faultNode{root.(*fs.LoopbackNode), faults}, &fs.Options{})
	if err != nil {
		t.Fatalf("mount a faulty view: %v", err)
	}
	t.Cleanup(func() {
		faults.SetRate(0)
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount the faulty view: %v", err)
		}
	})
	return view
}

// faultNode is a loopback node whose namespace, attribute and xattr calls
// may fail, and whose files are faultFiles.
type faultNode struct {
	*fs.LoopbackNode
	f *Faults
}

// WrapChild gives every child node the same faults.
func (n *faultNode) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &faultNode{ops.(*fs.LoopbackNode), n.f}
}

// do runs call unless the fault says to fail before it; a fault "after"
// does the work and fails anyway.
func do(fl fault, call func() syscall.Errno) syscall.Errno {
	if fl.errno != 0 && !fl.after {
		return fl.errno
	}
	if e := call(); e != 0 {
		return e
	}
	return fl.errno
}

func (n *faultNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if fl := n.f.draw("lookup", 0, ioErrnos...); fl.errno != 0 {
		return nil, fl.errno
	}
	return n.LoopbackNode.Lookup(ctx, name, out)
}

func (n *faultNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	fl := n.f.draw("create", 0, spaceErrnos...)
	if fl.errno != 0 && !fl.after {
		return nil, nil, 0, fl.errno
	}
	ch, fh, flags, e := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if e != 0 {
		return nil, nil, 0, e
	}
	if fl.errno != 0 {
		fh.(fs.FileReleaser).Release(ctx)
		return nil, nil, 0, fl.errno
	}
	return ch, &faultFile{fh.(*fs.LoopbackFile), n.f}, flags | fuse.FOPEN_DIRECT_IO, 0
}

func (n *faultNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if fl := n.f.draw("open", 0, ioErrnos...); fl.errno != 0 {
		return nil, 0, fl.errno
	}
	fh, fflags, e := n.LoopbackNode.Open(ctx, flags)
	if e != 0 {
		return nil, 0, e
	}
	return &faultFile{fh.(*fs.LoopbackFile), n.f}, fflags | fuse.FOPEN_DIRECT_IO, 0
}

func (n *faultNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	fl := n.f.draw("mkdir", 0, spaceErrnos...)
	if fl.errno != 0 && !fl.after {
		return nil, fl.errno
	}
	ch, e := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if e != 0 {
		return nil, e
	}
	if fl.errno != 0 {
		return nil, fl.errno
	}
	return ch, 0
}

func (n *faultNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	fl := n.f.draw("rename", 0, spaceErrnos...)
	if np, ok := newParent.(*faultNode); ok {
		newParent = np.LoopbackNode
	}
	return do(fl, func() syscall.Errno { return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags) })
}

func (n *faultNode) Unlink(ctx context.Context, name string) syscall.Errno {
	return do(n.f.draw("unlink", 0, ioErrnos...), func() syscall.Errno { return n.LoopbackNode.Unlink(ctx, name) })
}

func (n *faultNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	return do(n.f.draw("rmdir", 0, ioErrnos...), func() syscall.Errno { return n.LoopbackNode.Rmdir(ctx, name) })
}

func (n *faultNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if ff, ok := fh.(*faultFile); ok {
		fh = ff.LoopbackFile
	}
	return do(n.f.drawInPlace("setattr", 0, spaceErrnos...), func() syscall.Errno { return n.LoopbackNode.Setattr(ctx, fh, in, out) })
}

func (n *faultNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if ff, ok := fh.(*faultFile); ok {
		fh = ff.LoopbackFile
	}
	return n.LoopbackNode.Getattr(ctx, fh, out)
}

func (n *faultNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return do(n.f.drawInPlace("setxattr", 0, spaceErrnos...), func() syscall.Errno { return n.LoopbackNode.Setxattr(ctx, attr, data, flags) })
}

func (n *faultNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if fl := n.f.draw("getxattr", 0, ioErrnos...); fl.errno != 0 {
		return 0, fl.errno
	}
	return n.LoopbackNode.Getxattr(ctx, attr, dest)
}

// faultFile is an open file of a FaultyDir whose reads, writes, syncs and
// fallocates may fail or be cut short.
type faultFile struct {
	*fs.LoopbackFile
	f *Faults
}

// PassthroughFd refuses kernel passthrough, which would take the reads
// and writes past Read and Write.
func (ff *faultFile) PassthroughFd() (int, bool) { return -1, false }

func (ff *faultFile) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	fl := ff.f.draw("read", len(buf), ioErrnos...)
	if fl.errno != 0 {
		return nil, fl.errno
	}
	if fl.short > 0 {
		buf = buf[:fl.short]
	}
	return ff.LoopbackFile.Read(ctx, buf, off)
}

func (ff *faultFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	fl := ff.f.drawInPlace("write", len(data), spaceErrnos...)
	if fl.short > 0 {
		data = data[:fl.short]
	}
	var n uint32
	e := do(fl, func() syscall.Errno {
		var e syscall.Errno
		n, e = ff.LoopbackFile.Write(ctx, data, off)
		return e
	})
	if e != 0 {
		return 0, e
	}
	return n, 0
}

func (ff *faultFile) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return do(ff.f.drawInPlace("fsync", 0, spaceErrnos...), func() syscall.Errno { return ff.LoopbackFile.Fsync(ctx, flags) })
}

func (ff *faultFile) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	return do(ff.f.drawInPlace("fallocate", 0, spaceErrnos...), func() syscall.Errno { return ff.LoopbackFile.Allocate(ctx, off, size, mode) })
}
