package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"golang.org/x/sys/unix"
)

// TestUpgradeContentMount: a format-1 vault with files, directories, a
// hard link, a symlink, xattrs and a long name, made through a real
// mount, is upgraded (config and content) and mounts again with
// everything identical; the binding is on: a file's backing contents
// moved under another name read as EIO. A second upgrade says the vault
// is up to date.
func TestUpgradeContentMount(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw") // format 1
	pf := writePassfile(t, "pw")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	long := strings.Repeat("l", 200)
	files := map[string][]byte{
		"empty":            nil,
		"one":              {1},
		"d/big":            bytes.Repeat([]byte("0123456789abcdef"), 5000), // several chunks
		"d/sub/" + long:    []byte("a long name"),
		"d/sub/victim":     []byte("the victim's own contents"),
		"d/sub/other-name": []byte("contents that will be moved"),
		"hard":             []byte("two names, one file"),
	}

	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.MkdirAll(filepath.Join(mnt, "d/sub"), 0o755))
	for name, data := range files {
		must(t, os.WriteFile(filepath.Join(mnt, name), data, 0o640))
	}
	must(t, os.Link(filepath.Join(mnt, "hard"), filepath.Join(mnt, "d/hard-too")))
	must(t, os.Symlink("d/big", filepath.Join(mnt, "sym")))
	must(t, unix.Setxattr(filepath.Join(mnt, "one"), "user.color", []byte("green"), 0))
	must(t, unix.Setxattr(filepath.Join(mnt, "d"), "user.dir", []byte("dir attr"), 0))
	run(t, "", "unmount", mnt).want(t, 0)
	files["d/hard-too"] = files["hard"]

	r := run(t, "", "upgrade", "--json", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "Upgraded "+dir+" to format 2") || !strings.Contains(r.stdout, "to location binding") {
		t.Fatalf("upgrade said:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, `"op":"upgrade"`) || !strings.Contains(r.stderr, `"done":true`) {
		t.Fatalf("no JSON progress on stderr:\n%s", r.stderr)
	}
	r = run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "up to date") {
		t.Fatalf("second upgrade said:\n%s", r.stdout)
	}
	r = run(t, "", "info", "--json", dir)
	r.want(t, 0)
	var info infoJSON
	must(t, json.Unmarshal([]byte(r.stdout), &info))
	if info.FormatVersion != 2 || !strings.Contains(strings.Join(info.FeatureFlags, " "), "BoundLocations") || len(info.VaultID) != 32 {
		t.Fatalf("info after upgrade: %+v", info)
	}

	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(mnt, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s after upgrade: %d bytes, %v (want %d bytes)", name, len(got), err, len(want))
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(mnt, "hard"), &st); err != nil || st.Nlink != 2 {
		t.Errorf("hard link after upgrade: nlink %d, %v", st.Nlink, err)
	}
	if target, err := os.Readlink(filepath.Join(mnt, "sym")); err != nil || target != "d/big" {
		t.Errorf("symlink after upgrade: %q, %v", target, err)
	}
	for p, want := range map[string]string{"one": "green", "d": "dir attr"} {
		buf := make([]byte, 64)
		n, err := unix.Getxattr(filepath.Join(mnt, p), map[string]string{"one": "user.color", "d": "user.dir"}[p], buf)
		if err != nil || string(buf[:n]) != want {
			t.Errorf("xattr of %s after upgrade: %q, %v", p, buf[:max(n, 0)], err)
		}
	}
	// New files in the upgraded vault work as usual.
	must(t, os.WriteFile(filepath.Join(mnt, "d/new"), []byte("new"), 0o600))
	run(t, "", "unmount", mnt).want(t, 0)

	// The binding is on: another file's contents moved under victim's
	// name fail to read, where a v1 vault read them as victim's.
	from := backingOf(t, dir, pf, "d/sub/other-name")
	to := backingOf(t, dir, pf, "d/sub/victim")
	must(t, os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)))
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	if _, err := os.ReadFile(filepath.Join(mnt, "d/sub/victim")); !errors.Is(err, syscall.EIO) {
		t.Errorf("moved contents read: %v, want EIO", err)
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "d/big")); err != nil || !bytes.Equal(got, files["d/big"]) {
		t.Errorf("d/big after the move: %v", err)
	}
	run(t, "", "unmount", mnt).want(t, 0)
}

// backingOf is encrypt-path's answer for plaintext path p.
func backingOf(t *testing.T, dir, pf, p string) string {
	t.Helper()
	r := run(t, "", "encrypt-path", "--passfile", pf, dir, p)
	r.want(t, 0)
	return strings.TrimSpace(r.stdout)
}

// TestUpgradeInterrupted: an upgrade killed (SIGKILL) in the middle of
// the content leaves a vault that every command refuses with exit 6 and
// one line saying to run upgrade again; running it again finishes, and
// every file reads back.
func TestUpgradeInterrupted(t *testing.T) {
	dir, _ := newVault(t, "pw") // format 1: the upgrade does both steps
	pf := writePassfile(t, "pw")
	src := t.TempDir()
	const n = 3000
	for i := range n {
		sub := filepath.Join(src, fmt.Sprintf("d%02d", i%30))
		must(t, os.MkdirAll(sub, 0o700))
		must(t, os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d", i)), bytes.Repeat([]byte{byte(i)}, 100+i%5000), 0o600))
	}
	run(t, "", "import", "--passfile", pf, dir, src, "tree").want(t, 0)

	cmd := exec.Command(binary, "upgrade", "--json", "--passfile", pf, dir)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	sc := bufio.NewScanner(stderr)
	killed := false
	for sc.Scan() {
		var line progressLine
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Files > 0 && line.Files < line.TotalFiles/2 {
			cmd.Process.Kill()
			killed = true
			break
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatal("the upgrade finished before it could be killed halfway (make the vault bigger)")
	}

	for _, args := range [][]string{{"ls", "--passfile", pf, dir}, {"fsck", "--passfile", pf, dir}} {
		r := run(t, "", args...)
		r.want(t, ExitUnsupported)
		if !strings.Contains(r.stderr, "encryptfs upgrade") {
			t.Fatalf("%s of a half-upgraded vault said: %s", args[0], r.stderr)
		}
	}
	if _, err := os.Stat("/dev/fuse"); err == nil {
		mnt := t.TempDir()
		cleanupMount(t, mnt)
		r := run(t, "", "mount", "--passfile", pf, dir, mnt)
		r.want(t, ExitUnsupported)
		if !strings.Contains(r.stderr, "encryptfs upgrade") {
			t.Fatalf("mount of a half-upgraded vault said: %s", r.stderr)
		}
	}

	r := run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "Finished the interrupted upgrade") {
		t.Fatalf("second upgrade said:\n%s", r.stdout)
	}
	out := filepath.Join(t.TempDir(), "out")
	run(t, "", "export", "--passfile", pf, dir, out).want(t, 0)
	for i := range n {
		rel := filepath.Join(fmt.Sprintf("d%02d", i%30), fmt.Sprintf("f%04d", i))
		got, err := os.ReadFile(filepath.Join(out, "tree", rel))
		if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(i)}, 100+i%5000)) {
			t.Fatalf("%s after the resumed upgrade: %d bytes, %v", rel, len(got), err)
		}
	}
	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
}

// TestUpgradeBlockedCLI: a file with a hard link outside the vault
// cannot be bound (its place there is unknown): upgrade says which on one
// line (11) before it converts anything, and the vault still opens.
func TestUpgradeBlockedCLI(t *testing.T) {
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	putFile(t, dir, "a.txt", "two names", "--passfile", pf)
	from := backingOf(t, dir, pf, "a.txt")
	must(t, os.Link(filepath.Join(dir, from), filepath.Join(t.TempDir(), "outside")))
	r := run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, ExitCorruptData)
	if !strings.Contains(r.stderr, "another hard link") || !strings.Contains(r.stderr, "a.txt") {
		t.Fatalf("blocked upgrade said: %s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "encryptfs.upgrade")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a blocked upgrade left its marker: %v", err)
	}
	r = run(t, "", "cat", "--passfile", pf, dir, "a.txt")
	r.want(t, 0)
	if r.stdout != "two names" {
		t.Fatalf("cat after a blocked upgrade: %q", r.stdout)
	}
}

// TestUpgradeLinksCLI: a file with four names (more than a v2 header
// binds) is upgraded: bound at every name through its links file
// (docs/format.md §14), read at each afterwards, and fsck finds the vault
// clean.
func TestUpgradeLinksCLI(t *testing.T) {
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	putFile(t, dir, "a.txt", "four names", "--passfile", pf)
	from := backingOf(t, dir, pf, "a.txt")
	names := []string{"a.txt", "b.txt", "c.txt", "d.txt"}
	for _, n := range names[1:] {
		must(t, os.Link(filepath.Join(dir, from), filepath.Join(dir, backingOf(t, dir, pf, n))))
	}
	run(t, "", "upgrade", "--passfile", pf, dir).want(t, 0)
	if m, _ := filepath.Glob(filepath.Join(dir, "encryptfs.links.*")); len(m) != 1 {
		t.Fatalf("links files after the upgrade: %v", m)
	}
	for _, n := range names {
		r := run(t, "", "cat", "--passfile", pf, dir, n)
		r.want(t, 0)
		if r.stdout != "four names" {
			t.Fatalf("cat %s after the upgrade: %q", n, r.stdout)
		}
	}
	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
}
