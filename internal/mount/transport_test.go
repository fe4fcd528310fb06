package mount

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fuseuring"
	"golang.org/x/sys/unix"
)

// testTransport is the transport the tests mount with:
// $ENCRYPTFS_TRANSPORT (as the CLI reads it), so that scripts/test.sh runs
// every FUSE suite on both transports. newVault turns io_uring on for a
// uring mount (requireURing).
func testTransport(t testing.TB) fuseuring.Mode {
	mode, err := fuseuring.ParseMode(os.Getenv("ENCRYPTFS_TRANSPORT"))
	if err != nil {
		t.Fatal(err)
	}
	return mode
}

// requireURing turns FUSE over io_uring on (as root) or skips; under
// CI=true a kernel that cannot is a failure.
func requireURing(t testing.TB) {
	t.Helper()
	if err := fuseuring.Enable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %v", err)
		}
		t.Skip(err)
	}
}

// TestURingServesRequests mounts over io_uring and checks that requests
// really travel through the rings, and through the ring of the caller's
// CPU: with the caller pinned to each CPU in turn, the lookups it causes
// must be answered by that CPU's queue. The classic /dev/fuse reader does
// not count, so a mount that silently served everything there fails.
func TestURingServesRequests(t *testing.T) {
	requireURing(t)
	v := newVault(t, func(o *Options) {
		o.Transport = fuseuring.URing
		o.SharedStorage = true // no attribute cache: every stat is a request
	})
	if got := v.srv.Transport(); got != "io_uring" {
		t.Fatalf("transport %q, log:\n%s", got, v.log)
	}
	if got := v.srv.DescribeTransport(); !strings.HasPrefix(got, "io_uring, ") {
		t.Errorf("DescribeTransport() = %q", got)
	}
	p := filepath.Join(v.mnt, "f")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	const stats = 50
	for cpu := range runtime.NumCPU() {
		before := v.srv.RingRequests()
		onCPU(t, cpu, func() {
			for range stats {
				var st unix.Stat_t
				if err := unix.Stat(p, &st); err != nil {
					t.Fatal(err)
				}
			}
		})
		after := v.srv.RingRequests()
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
	requireRoot(t)
	restore := setURingParam(t, "N")
	defer restore()
	v := newVault(t, func(o *Options) { o.Transport = fuseuring.Auto })
	if got := v.srv.Transport(); got != "classic" {
		t.Fatalf("transport %q", got)
	}
	var lines []string
	for _, l := range strings.Split(v.log.String(), "\n") {
		if strings.Contains(l, "transport:") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "enable_uring is N") {
		t.Errorf("want one transport line saying why, got %q", lines)
	}
	if err := os.WriteFile(filepath.Join(v.mnt, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := v.srv.RingRequests(); n != nil {
		t.Errorf("classic mount has rings: %v", n)
	}

	mnt := t.TempDir()
	_, err := Mount(Options{Session: v.session(t), MountPoint: mnt, Transport: fuseuring.URing})
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
