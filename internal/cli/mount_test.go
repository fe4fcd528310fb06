package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/vault"
)

// isMounted reports whether an encryptfs mount sits on mnt.
func isMounted(t *testing.T, mnt string) bool {
	t.Helper()
	fstype, err := mountType(mnt)
	return err == nil && fstype == "fuse.encryptfs"
}

// cleanupMount makes sure mnt is unmounted when the test ends, even on
// failure.
func cleanupMount(t *testing.T, mnt string) {
	t.Cleanup(func() {
		for i := 0; i < 50 && isMounted(t, mnt); i++ {
			if err := unmount(mnt, i > 20); err != nil {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if isMounted(t, mnt) {
			t.Errorf("could not unmount %s", mnt)
		}
	})
}

// waitFor polls cond for up to 20 s (the mount is asynchronous from the
// test's point of view; this bounds a hang, it asserts no speed).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestMountDaemon(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, key := newVault(t, "pw")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	pf := writePassfile(t, "pw")

	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	if !isMounted(t, mnt) {
		t.Fatal("mount returned 0 but nothing is mounted")
	}
	secret := []byte("plaintext that must not appear on disk")
	if err := os.WriteFile(filepath.Join(mnt, "note.txt"), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "note.txt")); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("read back: %q, %v", got, err)
	}
	// The same mount point cannot be mounted twice (it is not empty now).
	before := hashTree(t, dir)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, ExitMountPoint)
	unchangedTree(t, dir, before)
	// Nor an empty mounted vault (the mount point looks empty).
	dir2, _ := newVault(t, "pw")
	mnt2 := t.TempDir()
	cleanupMount(t, mnt2)
	run(t, "", "mount", "--passfile", pf, dir2, mnt2).want(t, 0)
	before2 := hashTree(t, dir2)
	run(t, "", "mount", "--passfile", pf, dir2, mnt2).want(t, ExitMountPoint)
	run(t, "", "mount", "--passfile", pf, dir, mnt2).want(t, ExitMountPoint)
	unchangedTree(t, dir2, before2)
	unchangedTree(t, dir, before)
	run(t, "", "unmount", mnt2).want(t, 0)
	run(t, "", "unmount", mnt).want(t, 0)
	if isMounted(t, mnt) {
		t.Fatal("still mounted after unmount")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if strings.Contains(e.Name(), "note") || bytes.Contains(data, secret) {
			t.Fatalf("plaintext visible in CIPHERDIR entry %q", e.Name())
		}
	}

	// Master key from stdin, read-only.
	run(t, key+"\n", "mount", "--masterkey", "--ro", dir, mnt).want(t, 0)
	if got, err := os.ReadFile(filepath.Join(mnt, "note.txt")); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("read with master key: %q, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "new"), nil, 0o600); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write on a read-only mount: %v", err)
	}
	run(t, "", "unmount", mnt).want(t, 0)

	// The form mount.fuse3 uses for fstab entries.
	run(t, "", dir, mnt, "-o", "rw,nofail,passfile="+pf).want(t, 0)
	if !isMounted(t, mnt) {
		t.Fatal("fstab-style mount did not mount")
	}
	run(t, "", "unmount", mnt).want(t, 0)
	run(t, "", "unmount", mnt).want(t, ExitUnmount)
}

func TestMountForeground(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	cmd := exec.Command(binary, "mount", "-f", "--passfile", writePassfile(t, "pw"), dir, mnt)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	waitFor(t, "the foreground mount", func() bool { return isMounted(t, mnt) })
	if err := os.Mkdir(filepath.Join(mnt, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("foreground mount exited with %v\n%s", waitErr, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("foreground mount did not exit on SIGTERM")
	}
	if isMounted(t, mnt) {
		t.Fatal("still mounted after SIGTERM")
	}
	if strings.Contains(stderr.String(), "pw") {
		t.Fatalf("log mentions the password:\n%s", stderr.String())
	}
}

func TestMountIdle(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--idle", "1s", "--passfile", writePassfile(t, "pw"), dir, mnt).want(t, 0)
	if !isMounted(t, mnt) {
		t.Fatal("not mounted")
	}
	waitFor(t, "the idle unmount", func() bool { return !isMounted(t, mnt) })
}

func TestPasswdWrongMasterKey(t *testing.T) {
	dir, key := newVault(t, "pw")
	v, err := vault.Open(dir, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile("entry", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	v.Close()
	wrong := strings.Repeat("ab", 32)
	newPF := writePassfile(t, "new")
	run(t, wrong+"\n", "passwd", "--masterkey", "--new-passfile", newPF, dir).want(t, ExitWrongPassword)
	r := run(t, key+"\n", "passwd", "--masterkey", "--new-passfile", newPF, dir)
	r.want(t, 0)
	if r.stderr != "" {
		t.Fatalf("unexpected warning with a checkable master key: %s", r.stderr)
	}
	if _, err := vault.Open(dir, []byte("new")); err != nil {
		t.Fatalf("open with the new password: %v", err)
	}
}

func TestMountPasswordSources(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
	}{
		{"stdin", "pw\n", nil},
		{"extpass", "", []string{"--extpass", "cat " + pf}},
		{"-o passfile", "", []string{"-o", "passfile=" + pf}},
		{"fstab-only option", "", []string{"--passfile", pf, "-o", "nofail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := t.TempDir()
			cleanupMount(t, mnt)
			args := append(append([]string{"mount"}, tc.args...), dir, mnt)
			run(t, tc.stdin, args...).want(t, 0)
			if !isMounted(t, mnt) {
				t.Fatal("not mounted")
			}
			run(t, "", "unmount", mnt).want(t, 0)
		})
	}
}

// TestMountKeepsCallerModes: the daemon runs as its own process with its own
// umask (022 here); entries created through the mount must get exactly the
// mode the caller asked for after the caller's umask, not the daemon's on top.
func TestMountKeepsCallerModes(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	pf := writePassfile(t, "pw")
	old := syscall.Umask(0o022) // the daemon inherits this
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	syscall.Umask(old)
	script := "umask 000 && : > " + mnt + "/f && mkdir " + mnt + "/d && mkfifo " + mnt + "/p"
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	for name, want := range map[string]os.FileMode{"f": 0o666, "d": os.ModeDir | 0o777, "p": os.ModeNamedPipe | 0o666} {
		fi, err := os.Lstat(filepath.Join(mnt, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), want)
		}
	}
	run(t, "", "unmount", mnt).want(t, 0)
}
