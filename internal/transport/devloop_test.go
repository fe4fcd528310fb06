package transport

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// TestClassicWorkers: a classic mount is served by the worker threads on
// their cloned fds, one per CPU, and every request reaches them (go-fuse's
// own reader does not run while they do). With the go-fuse loop asked
// for, there are no workers.
func TestClassicWorkers(t *testing.T) {
	m, mnt, err := mountMem(t, Options{Mode: Classic})
	if err != nil {
		t.Fatal(err)
	}
	if m.Transport != "classic" || len(m.workers) == 0 {
		t.Fatalf("transport %q, %d workers", m.Transport, len(m.workers))
	}
	if n := len(allowedCPUs()); len(m.workers) != n || m.Waiters() != n {
		t.Errorf("%d workers, %d waiters, %d CPUs", len(m.workers), m.Waiters(), n)
	}
	served := func() (n uint64) {
		for _, w := range m.workers {
			n += w.served.Load()
		}
		return n
	}
	before := served()
	for range 10 {
		if got := readWithin(t, filepath.Join(mnt, "hello")); got != "hi" {
			t.Fatalf("read %q", got)
		}
	}
	// LOOKUP, OPEN, READ at least (timeouts are 0), and a RELEASE, which
	// may still be on its way.
	if d := served() - before; d < 30 {
		t.Errorf("10 reads, the workers answered %d requests", d)
	}
	if n := m.RingRequests(); n != nil {
		t.Errorf("classic mount has rings: %v", n)
	}

	g, _, err := mountMem(t, Options{Mode: Classic, goFuseLoop: true})
	if err != nil {
		t.Fatal(err)
	}
	if g.workers != nil || g.Waiters() != 0 {
		t.Errorf("go-fuse loop asked for, %d workers, %d waiters", len(g.workers), g.Waiters())
	}
}

// daemonEnv makes the test binary a daemon that mounts memRoot over the
// classic workers on the directory it names and serves until killed
// (TestClassicKill).
const daemonEnv = "FUSEURING_TEST_DAEMON"

func TestMain(m *testing.M) {
	if mnt := os.Getenv(daemonEnv); mnt != "" {
		zero := time.Duration(0)
		raw := fs.NewNodeFS(&memRoot{}, &fs.Options{EntryTimeout: &zero, AttrTimeout: &zero})
		mo, err := New(raw, mnt, fuse.MountOptions{Name: "fuseuringtest", MaxWrite: 1 << 20, DirectMount: true}, Options{Mode: Classic})
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
		go mo.Serve()
		if err := mo.WaitMount(); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("ready\n")
		select {}
	}
	os.Exit(m.Run())
}

// TestClassicKill: after kill -9 of a daemon serving with the worker
// threads, the mount answers ENOTCONN at once (no request hangs) and
// unmounts; SIGTERM and unmount are the fuseserver's and
// internal/mount's tests (TestSignalUnmount).
func TestClassicKill(t *testing.T) {
	requireRootFUSE(t)
	mnt := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), daemonEnv+"="+mnt)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		unix.Unmount(mnt, unix.MNT_DETACH)
	})
	line := make([]byte, 6)
	if _, err := out.Read(line); err != nil || string(line) != "ready\n" {
		t.Fatalf("daemon: %q, %v", line, err)
	}
	if got := readWithin(t, filepath.Join(mnt, "hello")); got != "hi" {
		t.Fatalf("read %q", got)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	errc := make(chan error, 1)
	go func() {
		var st unix.Stat_t
		errc <- unix.Stat(filepath.Join(mnt, "hello"), &st)
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, unix.ENOTCONN) && !errors.Is(err, unix.ECONNABORTED) {
			t.Errorf("stat after kill -9: %v, want ENOTCONN", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("stat on the killed mount hangs")
	}
	if err := unix.Unmount(mnt, 0); err != nil {
		t.Errorf("unmount after kill -9: %v", err)
	}
}

// requireRootFUSE skips without FUSE or without root (the daemon mounts
// with mount(2), and the test unmounts with umount(2)).
func requireRootFUSE(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but not root")
		}
		t.Skip("needs root")
	}
	fstest.RequireFUSE(t)
}

// TestAllowedCPUs: one classic worker per CPU the process may run on,
// each with its own CPU.
func TestAllowedCPUs(t *testing.T) {
	cpus := allowedCPUs()
	if len(cpus) != runtime.NumCPU() {
		t.Errorf("allowedCPUs() = %v, NumCPU %d", cpus, runtime.NumCPU())
	}
	seen := map[int]bool{}
	for _, c := range cpus {
		if seen[c] {
			t.Errorf("CPU %d twice: %v", c, cpus)
		}
		seen[c] = true
	}
}

// slowRoot has "hello" and "slow", whose READ waits until release is
// closed.
type slowRoot struct {
	fs.Inode
	release chan struct{}
}

func (r *slowRoot) OnAdd(ctx context.Context) {
	hello := r.NewPersistentInode(ctx, &fs.MemRegularFile{Data: []byte("hi"), Attr: fuse.Attr{Mode: 0o644}}, fs.StableAttr{})
	r.AddChild("hello", hello, false)
	slow := r.NewPersistentInode(ctx, &slowFile{release: r.release}, fs.StableAttr{})
	r.AddChild("slow", slow, false)
}

type slowFile struct {
	fs.Inode
	release chan struct{}
}

func (f *slowFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode, out.Size = 0o644, 4
	return 0
}

func (f *slowFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (f *slowFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	<-f.release
	return fuse.ReadResultData([]byte("slow")[min(off, 4):]), 0
}

// TestClassicHandOff: while one worker is stuck on a slow request, the
// others go on answering, whether every worker reads (the default) or
// the next one is woken only then (the lazy hand-off, a test hook); the
// slow one completes when released.
func TestClassicHandOff(t *testing.T) {
	if len(allowedCPUs()) < 2 {
		t.Skip("one CPU: one worker")
	}
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"every worker reads", Options{Mode: Classic}},
		{"lazy hand-off", Options{Mode: Classic, lazyHandOff: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := &slowRoot{release: make(chan struct{})}
			m, mnt, err := mountRoot(t, root, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.workers) < 2 {
				t.Fatalf("%d workers", len(m.workers))
			}
			slow := make(chan string, 1)
			go func() {
				b, _ := os.ReadFile(filepath.Join(mnt, "slow"))
				slow <- string(b)
			}()
			time.Sleep(100 * time.Millisecond) // the READ is in its handler
			for range 10 {
				if got := readWithin(t, filepath.Join(mnt, "hello")); got != "hi" {
					t.Fatalf("read %q", got)
				}
			}
			close(root.release)
			select {
			case got := <-slow:
				if got != "slow" {
					t.Errorf("slow read %q", got)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the slow read did not end")
			}
		})
	}
}
