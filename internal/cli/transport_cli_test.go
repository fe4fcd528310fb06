package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestMountTransportForeground: --transport uring serves over io_uring and
// says so in the mount's log line; SIGTERM unmounts and the process ends
// (no ring thread left behind).
func TestMountTransportForeground(t *testing.T) {
	mounttest.RequireURing(t)
	dir, _ := newVault(t, "pw")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	cmd := exec.Command(binary, "mount", "-f", "--transport", "uring", "--passfile", writePassfile(t, "pw"), dir, mnt)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	exited := startCmd(t, cmd)
	waitFor(t, "the mount", func() bool { return isMounted(t, mnt) })
	useMount(t, mnt)
	waitFor(t, "the mounted line", func() bool { return strings.Contains(stderr.String(), "mounted ") })
	if !strings.Contains(stderr.String(), "(transport: io_uring, ") {
		t.Errorf("log does not say io_uring:\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(exited); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, stderr.String())
	}
	if isMounted(t, mnt) {
		t.Fatal("still mounted after SIGTERM")
	}
}

// TestMountTransportOption: -o transport=classic and a bad value.
func TestMountTransportOption(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	pf := writePassfile(t, "pw")
	run(t, "", "mount", "-o", "transport=bogus,passfile="+pf, dir, mnt).want(t, ExitUsage)
	run(t, "", "mount", "--transport", "uring", "--reverse", "--passfile", pf, dir, mnt).want(t, ExitUsage)
	cmd := exec.Command(binary, "mount", "-f", "-o", "transport=classic,passfile="+pf, dir, mnt)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	exited := startCmd(t, cmd)
	waitFor(t, "the mounted line", func() bool { return strings.Contains(stderr.String(), "mounted ") })
	if !strings.Contains(stderr.String(), "(transport: classic /dev/fuse)") {
		t.Errorf("log does not say classic:\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := waitExit(exited); err != nil {
		t.Fatal(err)
	}
}

// TestMountTransportTeardown: a daemonized io_uring mount goes away cleanly
// and its daemon ends on SIGTERM, on the idle timer and on unmount; after
// kill -9 the mount answers ENOTCONN at once (nothing hangs) and unmounts.
func TestMountTransportTeardown(t *testing.T) {
	mounttest.RequireURing(t)
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	for _, how := range []string{"unmount", "SIGTERM", "idle", "kill -9"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			mnt := t.TempDir()
			cleanupMount(t, mnt)
			args := []string{"mount", "--transport", "uring", "--passfile", pf}
			if how == "idle" {
				// Long enough that a loaded machine finds the daemon
				// before the timer ends the mount (1 s was not, in CI).
				args = append(args, "--idle", "4s")
			}
			run(t, "", append(args, dir, mnt)...).want(t, 0)
			pid := daemonPID(t, mnt)
			useMount(t, mnt)
			switch how {
			case "unmount":
				run(t, "", "unmount", mnt).want(t, 0)
			case "SIGTERM":
				unix.Kill(pid, unix.SIGTERM)
			case "kill -9":
				unix.Kill(pid, unix.SIGKILL)
			}
			waitFor(t, "the daemon's end", func() bool { return !alive(pid) })
			if how != "kill -9" {
				waitFor(t, "the unmount", func() bool { return !isMounted(t, mnt) })
				return
			}
			// The connection is gone: a lookup (of a name the kernel has
			// not cached) must fail at once, not hang.
			errc := make(chan error, 1)
			go func() {
				var st unix.Stat_t
				errc <- unix.Stat(filepath.Join(mnt, "not-cached"), &st)
			}()
			select {
			case err := <-errc:
				// ENOTCONN once the connection is gone; ECONNABORTED or
				// ECANCELED (a request cancelled on its io_uring queue) when
				// the lookup races the kernel's teardown. Any of them is an
				// immediate failure, which is what this checks.
				if !errors.Is(err, unix.ENOTCONN) && !errors.Is(err, unix.ECONNABORTED) && !errors.Is(err, unix.ECANCELED) {
					t.Errorf("stat after kill -9: %v, want ENOTCONN (or ECONNABORTED/ECANCELED while tearing down)", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("stat on the killed mount hangs")
			}
			run(t, "", "unmount", mnt).want(t, 0)
		})
	}
}

// useMount writes, reads and lists through mnt.
func useMount(t *testing.T, mnt string) {
	t.Helper()
	p := filepath.Join(mnt, "f")
	if err := os.WriteFile(p, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "data" {
		t.Fatalf("read %q, %v", b, err)
	}
	if _, err := os.ReadDir(mnt); err != nil {
		t.Fatal(err)
	}
}

// daemonPID finds the daemon serving mnt: our binary with mnt last on its
// command line.
func daemonPID(t *testing.T, mnt string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) > 2 && args[0] == binary && args[len(args)-1] == mnt {
			pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
			return pid
		}
	}
	t.Fatalf("no daemon for %s", mnt)
	return 0
}

// alive reports whether pid runs (a zombie has ended).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// startCmd starts cmd and returns its end; the test's cleanup kills it if
// it is still running.
func startCmd(t *testing.T, cmd *exec.Cmd) <-chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if alive(cmd.Process.Pid) {
			cmd.Process.Kill()
		}
	})
	return exited
}

// waitExit waits up to 20 s for a command's end.
func waitExit(exited <-chan error) error {
	select {
	case err := <-exited:
		return err
	case <-time.After(20 * time.Second):
		return errors.New("did not exit within 20 s")
	}
}

// syncBuffer is a bytes.Buffer safe for a writer process and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestMountSignalWhileMounting: SIGTERM as soon as the mount exists (the
// daemon is still setting up: INIT, the rings, go-fuse's poll probe, which
// is a request from the daemon to its own mount) must end the daemon and
// the mount, never leave a daemon stuck waiting for itself.
func TestMountSignalWhileMounting(t *testing.T) {
	mounttest.RequireURing(t)
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	for i := range 10 {
		mnt := t.TempDir()
		cleanupMount(t, mnt)
		cmd := exec.Command(binary, "mount", "-f", "--transport", "uring", "--passfile", pf, dir, mnt)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		exited := startCmd(t, cmd)
		for start := time.Now(); !inProcMounts(mnt); time.Sleep(time.Millisecond) {
			if time.Since(start) > 20*time.Second {
				t.Fatal("not mounted")
			}
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if err := waitExit(exited); err != nil {
			t.Fatalf("round %d: SIGTERM while mounting: %v\n%s", i, err, stderr.String())
		}
		waitFor(t, "the unmount", func() bool { return !inProcMounts(mnt) })
	}
}

// inProcMounts reports whether mnt is in /proc/mounts, without touching
// the mount itself (a stat could wait for the daemon).
func inProcMounts(mnt string) bool {
	b, _ := os.ReadFile("/proc/mounts")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == mnt {
			return true
		}
	}
	return false
}
