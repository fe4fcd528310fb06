package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// blockingPassfile is a FIFO nobody writes: a command that reads the
// password from it waits forever, so one that returns did not ask.
func blockingPassfile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pw.fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runBounded is run with a deadline: a command still running after d
// (waiting for a password) is killed and the test fails.
func runBounded(t *testing.T, d time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v still running after %v (asked for a password?)", args, d)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// TestMountValidatesFirst: a bad -o option is a usage error before any
// password is read, and so is a second mount of a vault this machine
// serves already (8, naming where).
func TestMountValidatesFirst(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2")
	fifo := blockingPassfile(t)
	for _, opt := range []string{"garbage", "nonempty", "ro,garbage=1"} {
		r := runBounded(t, 5*time.Second, "mount", "-o", opt, "--passfile", fifo, dir, t.TempDir())
		r.want(t, ExitUsage)
		if strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, strings.Split(strings.TrimPrefix(opt, "ro,"), "=")[0]) {
			t.Errorf("-o %s: stderr %q: want one line naming the option", opt, r.stderr)
		}
	}

	fstest.RequireFUSE(t)
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", writePassfile(t, "pw"), dir, mnt).want(t, 0)
	start := time.Now()
	r := runBounded(t, 5*time.Second, "mount", "--passfile", fifo, dir, t.TempDir())
	r.want(t, ExitMountPoint)
	if !strings.Contains(r.stderr, "mounted on "+mnt) || strings.Contains(r.stderr, "fresh:") {
		t.Errorf("second mount: stderr %q: want it to name %s", r.stderr, mnt)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("second mount took %v to refuse", d)
	}
	run(t, "", "unmount", mnt).want(t, 0)
}

// TestInitInterrupted: Ctrl-C while init waits for the password removes
// the directory init made, and only that one.
func TestInitInterrupted(t *testing.T) {
	for _, existed := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "v")
		if existed {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(binary, "init", "--passfile", blockingPassfile(t), dir)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "init to make "+dir, func() bool { _, err := os.Stat(dir); return err == nil })
		time.Sleep(200 * time.Millisecond) // its signal handler is installed right after
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != ExitInterrupted {
			t.Fatalf("existed=%v: init after SIGINT: %v, stderr %q", existed, err, errb.String())
		}
		_, err = os.Stat(dir)
		if existed && err != nil {
			t.Errorf("init removed %s, which was there before: %v", dir, err)
		}
		if !existed && !os.IsNotExist(err) {
			t.Errorf("init left %s behind after SIGINT: %v", dir, err)
		}
	}
}

// TestExportWrongPasswordLeavesNoDest: a refused unlock removes the
// DESTDIR export made, and keeps one that was there.
func TestExportWrongPasswordLeavesNoDest(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2")
	dest := filepath.Join(t.TempDir(), "out")
	run(t, "", "export", "--passfile", writePassfile(t, "wrong"), dir, dest).want(t, ExitWrongPassword)
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("export left %s behind: %v", dest, err)
	}
	run(t, "", "export", "--passfile", writePassfile(t, "pw"), dir, dest, "/missing").want(t, ExitError)
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("export of a missing PATH left %s behind: %v", dest, err)
	}
	if err := os.Mkdir(dest, 0o700); err != nil {
		t.Fatal(err)
	}
	run(t, "", "export", "--passfile", writePassfile(t, "wrong"), dir, dest).want(t, ExitWrongPassword)
	if _, err := os.Stat(dest); err != nil {
		t.Fatalf("export removed %s, which was there before: %v", dest, err)
	}
}
