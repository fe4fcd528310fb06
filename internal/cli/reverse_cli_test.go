package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fstest"
)

// TestReverseCommands: init --reverse, mount --reverse, copy the view, and
// the copy opens as a forward vault with the same password.
func TestReverseCommands(t *testing.T) {
	fstest.RequireFUSE(t)
	plain := t.TempDir()
	if err := os.MkdirAll(filepath.Join(plain, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plain, "sub", "f.txt"), []byte("reverse hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pf := writePassfile(t, "pw")
	initOut := run(t, "", append(append([]string{"init", "--reverse", "--passfile", pf}, cheapKDF...), plain)...)
	initOut.want(t, 0)
	key := masterKeyFrom(t, initOut.stdout)
	run(t, "", append(append([]string{"init", "--reverse", "--passfile", pf}, cheapKDF...), plain)...).want(t, ExitCipherDir)
	for _, args := range [][]string{{"info", "--json", plain}, {"info", "--json", "--reverse", plain}} {
		r := run(t, "", args...)
		r.want(t, 0)
		var info infoJSON
		if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || info.Cipher != "aes-256-siv" || !info.Reverse {
			t.Fatalf("%q: %v %+v", args, err, r)
		}
	}
	run(t, "", "info", "--reverse", t.TempDir()).want(t, ExitCipherDir)
	run(t, "", "init", "--reverse", "--cipher", "xchacha", "--passfile", pf, t.TempDir()).want(t, ExitUsage)
	run(t, "", "mount", "--exclude", "x", "--passfile", pf, plain, t.TempDir()).want(t, ExitUsage)
	run(t, "", "mount", "--reverse", "--passfile", pf, t.TempDir(), t.TempDir()).want(t, ExitCipherDir)

	view := t.TempDir()
	cleanupMount(t, view)
	run(t, "", "mount", "--reverse", "--passfile", pf, plain, view).want(t, 0)
	if fstype, err := mountType(view); err != nil || fstype != "fuse.encryptfs-reverse" {
		t.Fatalf("view mount type %q, %v", fstype, err)
	}
	copyDir := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", view, copyDir).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	run(t, "", "unmount", view).want(t, 0)

	r := run(t, "", "cat", "--passfile", pf, copyDir, "sub/f.txt")
	r.want(t, 0)
	if r.stdout != "reverse hello\n" {
		t.Fatalf("copy of the view reads %q", r.stdout)
	}

	// passwd on the reverse config: the view mounts with the new password
	// only, and its copies open with it.
	newPF := writePassfile(t, "new")
	run(t, "", "passwd", "--reverse", "--passfile", newPF, "--new-passfile", newPF, plain).want(t, ExitWrongPassword)
	run(t, "", "passwd", "--reverse", "--passfile", pf, "--new-passfile", newPF, plain).want(t, 0)
	if _, err := os.Stat(filepath.Join(plain, config.ReverseFileName+".bak")); err == nil {
		t.Fatal("passwd left a backup in PLAINDIR (it would show in the view)")
	}
	run(t, "", "mount", "--reverse", "--passfile", pf, plain, view).want(t, ExitWrongPassword)
	run(t, "", "mount", "--reverse", "--passfile", newPF, plain, view).want(t, 0)
	copy2 := filepath.Join(t.TempDir(), "copy")
	out, err := exec.Command("cp", "-a", view, copy2).CombinedOutput()
	run(t, "", "unmount", view).want(t, 0)
	if err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	if r := run(t, "", "cat", "--passfile", newPF, copy2, "sub/f.txt"); r.code != 0 || r.stdout != "reverse hello\n" {
		t.Fatalf("copy after passwd: %+v", r)
	}
	// Forgotten password: the master key from init --reverse (unchecked, so warned).
	r = run(t, key+"\n", "passwd", "--masterkey", "--new-passfile", pf, plain)
	r.want(t, 0)
	if !strings.Contains(r.stderr, "reverse mode") || !strings.Contains(r.stderr, "is set up for reverse mode") {
		t.Fatalf("no note/warning: %q", r.stderr)
	}
	run(t, "", "info", "--json", plain).want(t, 0)
	run(t, "", "passwd", "--reverse", "--passfile", pf, "--new-passfile", newPF, t.TempDir()).want(t, ExitCipherDir)
}
