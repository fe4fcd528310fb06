package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
)

// hashTree maps every path under dir (relative) to its mode and a hash of
// its contents (or symlink target): two equal maps mean nothing in the
// vault changed, not even a permission bit.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		var data []byte
		switch {
		case fi.Mode().IsRegular():
			data, err = os.ReadFile(p)
		case fi.Mode()&fs.ModeSymlink != 0:
			var target string
			target, err = os.Readlink(p)
			data = []byte(target)
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(data)
		out[rel] = fi.Mode().String() + " " + hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails the test if dir differs from the hashTree taken before.
func unchangedTree(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := hashTree(t, dir)
	for p, h := range before {
		if after[p] != h {
			t.Errorf("%s changed: %q -> %q", p, h, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared", p)
		}
	}
}

// TestMountPointRefused: a missing, non-directory, non-empty mount point
// or one inside the CIPHERDIR is refused with 8 before the password is
// read, and the vault is not touched. (Busy mount points, already mounted,
// are in TestMountDaemon.)
func TestMountPointRefused(t *testing.T) {
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	file := filepath.Join(t.TempDir(), "file")
	nonEmpty := t.TempDir()
	for _, p := range []string{file, filepath.Join(nonEmpty, "x")} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := hashTree(t, dir)
	for _, tc := range []struct{ name, mnt, want string }{
		{"missing", filepath.Join(t.TempDir(), "missing"), "MOUNTPOINT"},
		{"a file", file, "MOUNTPOINT"},
		{"not empty", nonEmpty, "not empty"},
		{"inside CIPHERDIR", dir, "inside CIPHERDIR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fg := range []string{"-f", "--ro"} {
				r := run(t, "", "mount", fg, "--passfile", pf, dir, tc.mnt)
				r.want(t, ExitMountPoint)
				if !strings.Contains(r.stderr, tc.want) {
					t.Errorf("stderr %q lacks %q", r.stderr, tc.want)
				}
			}
			unchangedTree(t, dir, before)
		})
	}
}

// TestMountReadOnlyCipherDir: a CIPHERDIR on a read-only file system is
// mounted read-only, with a one-line note, instead of failing on the first
// write.
func TestMountReadOnlyCipherDir(t *testing.T) {
	needRoot(t)
	fsDir := smallTmpfs(t, "4m")
	dir := filepath.Join(fsDir, "vault")
	pf := writePassfile(t, "pw")
	run(t, "", append(append([]string{"init", "--passfile", pf}, cheapKDF...), dir)...).want(t, 0)
	if out, err := exec.Command("mount", "-o", "remount,ro", fsDir).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v\n%s", err, out)
	}
	before := hashTree(t, dir)
	mnt := t.TempDir()
	cleanupMount(t, mnt) // registered after the tmpfs cleanup: runs first
	r := run(t, "", "mount", "--passfile", pf, dir, mnt)
	r.want(t, 0)
	if want := "encryptfs: note: " + dir + " is on a read-only file system; mounting read-only\n"; r.stderr != want {
		t.Fatalf("stderr %q, want %q", r.stderr, want)
	}
	if _, err := os.ReadDir(mnt); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "new"), nil, 0o600); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write: %v, want EROFS", err)
	}
	run(t, "", "unmount", mnt).want(t, 0)
	unchangedTree(t, dir, before)
	// Other refusals on a read-only CIPHERDIR change nothing either.
	run(t, "", "passwd", "--passfile", pf, "--new-passfile", writePassfile(t, "new"), dir).want(t, ExitError)
	unchangedTree(t, dir, before)
	if _, err := config.Load(dir); err != nil {
		t.Fatal(err)
	}
}

// TestFullDiskCommands: init and passwd on a full file system fail with
// exit code 12 and one line, and change nothing: init leaves the directory
// empty (so it can be retried), passwd leaves the old config, which still
// opens the vault.
func TestFullDiskCommands(t *testing.T) {
	needRoot(t)
	fsDir := smallTmpfs(t, "64k")
	dir := filepath.Join(fsDir, "vault")
	oldPF, newPF := writePassfile(t, "old"), writePassfile(t, "new")
	run(t, "", append(append([]string{"init", "--passfile", oldPF}, cheapKDF...), dir)...).want(t, 0)
	// Fill the file system to the last page.
	fill, err := os.Create(filepath.Join(fsDir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := fill.Write(make([]byte, 4096)); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	fill.Close()

	before := hashTree(t, dir)
	r := run(t, "", "passwd", "--passfile", oldPF, "--new-passfile", newPF, dir)
	r.want(t, ExitNoSpace)
	if !strings.Contains(r.stderr, "no space left on device") {
		t.Errorf("passwd on a full disk: %q", r.stderr)
	}
	unchangedTree(t, dir, before)
	run(t, "", "ls", "--passfile", oldPF, dir).want(t, 0)

	fresh := filepath.Join(fsDir, "fresh")
	r = run(t, "", append(append([]string{"init", "--passfile", oldPF}, cheapKDF...), fresh)...)
	r.want(t, ExitNoSpace)
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("init on a full disk left the directory it made (%v)", err)
	}
	must(t, os.Mkdir(fresh, 0o700)) // one that was there stays, empty
	run(t, "", append(append([]string{"init", "--passfile", oldPF}, cheapKDF...), fresh)...).want(t, ExitNoSpace)
	if ents, err := os.ReadDir(fresh); err != nil || len(ents) != 0 {
		t.Errorf("init on a full disk left %v (%v)", ents, err)
	}

	// export into a destination too small for one of the files: 12, the
	// other file is exported, and no cut-short copy is left.
	src, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	in := t.TempDir()
	if err := os.WriteFile(filepath.Join(in, "big"), make([]byte, 400_000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "small"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "", "import", "--passfile", pf, src, in).want(t, 0)
	dest := filepath.Join(smallTmpfs(t, "256k"), "out")
	r = run(t, "", "export", "--passfile", pf, src, dest)
	if r.code != ExitNoSpace || !strings.Contains(r.stderr, "no space left on device") {
		t.Fatalf("export to a full disk: exit %d\n%s", r.code, r.stderr)
	}
	if got, err := os.ReadFile(filepath.Join(dest, "small")); err != nil || string(got) != "hi" {
		t.Errorf("small file: %q %v", got, err)
	}
	if _, err := os.Lstat(filepath.Join(dest, "big")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cut-short copy of big was left: %v", err)
	}

	// import into a vault on a disk too small for one of the files: 12,
	// the other is imported, and fsck finds the vault clean.
	small := filepath.Join(smallTmpfs(t, "256k"), "vault")
	run(t, "", append(append([]string{"init", "--passfile", pf}, cheapKDF...), small)...).want(t, 0)
	r = run(t, "", "import", "--passfile", pf, small, in)
	if r.code != ExitNoSpace {
		t.Fatalf("import to a full disk: exit %d\n%s", r.code, r.stderr)
	}
	if r := run(t, "", "ls", "--passfile", pf, small); r.code != 0 || r.stdout != "small\n" {
		t.Errorf("vault after the import: exit %d, %q", r.code, r.stdout)
	}
	run(t, "", "fsck", "--passfile", pf, small).want(t, 0)
}

// smallTmpfs mounts a tmpfs of the given size on a temp dir, unmounted at
// the end of the test.
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount tmpfs: %v\n%s", err, out)
		}
	})
	return dir
}
