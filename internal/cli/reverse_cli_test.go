package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReverseCommands: init --reverse, mount --reverse, copy the view, and
// the copy opens as a forward vault with the same password.
func TestReverseCommands(t *testing.T) {
	needFUSE(t)
	plain := t.TempDir()
	if err := os.MkdirAll(filepath.Join(plain, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plain, "sub", "f.txt"), []byte("reverse hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pf := writePassfile(t, "pw")
	run(t, "", append(append([]string{"init", "--reverse", "--passfile", pf}, cheapKDF...), plain)...).want(t, 0)
	run(t, "", append(append([]string{"init", "--reverse", "--passfile", pf}, cheapKDF...), plain)...).want(t, ExitCipherDir)
	if r := run(t, "", "info", "--json", plain); r.code != 0 || !strings.Contains(r.stdout, "aes-256-siv") {
		t.Fatalf("info on a reverse PLAINDIR: %+v", r)
	}
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
}
