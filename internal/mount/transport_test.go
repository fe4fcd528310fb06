package mount_test

import (
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/transport"
	"golang.org/x/sys/unix"
)

// TestURingServesRequests mounts over io_uring and checks that requests
// really travel through the rings, and through the ring of the caller's
// CPU: with the caller pinned to each CPU in turn, the lookups it causes
// must be answered by that CPU's queue. The classic /dev/fuse reader does
// not count, so a mount that silently served everything there fails.
func TestURingServesRequests(t *testing.T) {
	mounttest.RequireURing(t)
	v := mounttest.NewVault(t, func(o *mount.Options) {
		o.Transport = transport.URing
		o.SharedStorage = true // no attribute cache: every stat is a request
	})
	if got := v.Srv.Transport(); got != "io_uring" {
		t.Fatalf("transport %q, log:\n%s", got, v.Log)
	}
	if got := v.Srv.DescribeTransport(); !strings.HasPrefix(got, "io_uring, ") {
		t.Errorf("DescribeTransport() = %q", got)
	}
	p := filepath.Join(v.Mnt, "f")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	const stats = 50
	for cpu := range runtime.NumCPU() {
		before := v.Srv.RingRequests()
		onCPU(t, cpu, func() {
			for range stats {
				var st unix.Stat_t
				if err := unix.Stat(p, &st); err != nil {
					t.Fatal(err)
				}
			}
		})
		after := v.Srv.RingRequests()
		if len(after) <= cpu {
			t.Fatalf("no ring for CPU %d: %v", cpu, after)
		}
		if d := after[cpu] - before[cpu]; d < stats {
			t.Errorf("CPU %d: %d stats, its ring answered %d requests (rings before %v, after %v)", cpu, stats, d, before, after)
		}
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "hello" {
		t.Fatalf("read %q, %v", b, err)
	}
}

// onCPU runs f on an OS thread pinned to cpu.
func onCPU(t *testing.T, cpu int, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // not unlocked: the thread ends with its affinity
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			t.Error(err)
			return
		}
		f()
	}()
	<-done
}

// TestTransportFallback: auto on a kernel with the parameter off mounts
// classic and says why in one log line; uring fails instead.
func TestTransportFallback(t *testing.T) {
	mounttest.RequireRoot(t)
	restore := setURingParam(t, "N")
	defer restore()
	v := mounttest.NewVault(t, func(o *mount.Options) { o.Transport = transport.Auto })
	if got := v.Srv.Transport(); got != "classic" {
		t.Fatalf("transport %q", got)
	}
	var lines []string
	for _, l := range strings.Split(v.Log.String(), "\n") {
		if strings.Contains(l, "transport:") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "enable_uring is N") {
		t.Errorf("want one transport line saying why, got %q", lines)
	}
	if err := os.WriteFile(filepath.Join(v.Mnt, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := v.Srv.RingRequests(); n != nil {
		t.Errorf("classic mount has rings: %v", n)
	}

	mnt := t.TempDir()
	_, err := mount.Mount(mount.Options{Session: v.Session(t), MountPoint: mnt, Transport: transport.URing})
	if err == nil {
		unix.Unmount(mnt, unix.MNT_DETACH)
		t.Fatal("uring mount with the parameter off worked")
	}
	if !strings.Contains(err.Error(), "enable_uring") {
		t.Errorf("error does not say why: %v", err)
	}
}

// setURingParam sets the fuse module's enable_uring to v until restore.
func setURingParam(t *testing.T, v string) (restore func()) {
	t.Helper()
	const p = "/sys/module/fuse/parameters/enable_uring"
	old, err := os.ReadFile(p)
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(p, []byte(v), 0); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.WriteFile(p, old, 0); err != nil {
			t.Error(err)
		}
	}
}

// TestURingLargeReadsAside: a sequential read's 1 MiB READs are answered
// off the ring's thread (transport's offload), and what they return is
// the file.
func TestURingLargeReadsAside(t *testing.T) {
	mounttest.RequireURing(t)
	v := mounttest.NewVault(t, func(o *mount.Options) {
		o.Transport = transport.URing
	})
	want := make([]byte, 8<<20+123)
	for i := range want {
		want[i] = byte(i*7 + i>>13)
	}
	p := filepath.Join(v.Mnt, "big")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	before := v.Srv.ReadsAside()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Drop the file's pages, so that the reads below go to the daemon as
	// the kernel's readahead's READs. The open alone drops them only if
	// the writer's RELEASE, which the kernel sends after close(2)
	// returned, came first (keepCache); when it had not, the reads were
	// all served from the cache and this test failed now and then.
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 0, len(want))
	buf := make([]byte, 128<<10)
	for {
		n, err := f.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	if string(got) != string(want) {
		t.Fatalf("read back %d bytes, not what was written", len(got))
	}
	if os.Geteuid() == 0 && v.Srv.ReadsAside() == before {
		// Readahead is raised to 1 MiB for root's mounts only.
		t.Errorf("no READ of the 8 MiB read was answered aside")
	}
}
