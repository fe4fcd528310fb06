package cli

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// davfs2Conf is the davfs2.conf of TestServeDavfs2. buf_size is what makes
// listings work on newer kernels: the kernel asks FUSE_READDIR for as many
// bytes as the getdents64 buffer (ls: 32 KiB), up to 128 KiB, and davfs2
// answers EINVAL to a READDIR larger than its buffer (16 KiB by default);
// 132 KiB covers the 128 KiB the kernel may ask (docs/serve.md, davfs2).
const davfs2Conf = `secrets %SECRETS%
cache_dir %CACHE%
buf_size 132
delay_upload 0
ask_auth 0
`

// TestServeDavfs2 mounts the server with davfs2 (a real kernel mount, with
// Basic authentication from a secrets file, no prompt), writes a tree
// through it, lists it with ls (glibc's 32 KiB getdents64) and with a 128
// KiB getdents64, reads it back, renames and deletes, and finds the
// result in the vault with export after unmounting.
func TestServeDavfs2(t *testing.T) {
	requireTool(t, "mount.davfs")
	requireTool(t, "umount.davfs")
	dir, _ := newVault(t, "pw", "--format", "2")
	users := filepath.Join(t.TempDir(), "users")
	run(t, "", "serve", "adduser", "--passfile", writePassfile(t, "u-pw"), users, "alice").want(t, 0)
	pf := writePassfile(t, "pw")
	d, url := startServe(t, dir, pf, "--users", users)
	defer func() {
		if d != nil {
			stopServe(t, d)
		}
	}()

	etc := t.TempDir()
	secrets := filepath.Join(etc, "secrets")
	must(t, os.WriteFile(secrets, []byte(url+" alice u-pw\n"), 0o600))
	conf := strings.NewReplacer("%SECRETS%", secrets, "%CACHE%", davfs2CacheDir(t)).Replace(davfs2Conf)
	confFile := filepath.Join(etc, "davfs2.conf")
	must(t, os.WriteFile(confFile, []byte(conf), 0o600))
	mnt := t.TempDir()
	unmountDavfs2 := davfs2Mount(t, url, mnt, confFile)

	src := t.TempDir()
	makeTree(t, src)
	must(t, os.Remove(filepath.Join(src, "link"))) // WebDAV has no symlinks
	for i := range 300 {                           // a listing over several getdents64 calls
		must(t, os.WriteFile(filepath.Join(src, "empty", strings.Repeat("n", 40)+string(rune('a'+i%26))+strconv.Itoa(i)), []byte{byte(i)}, 0o644))
	}
	tree := filepath.Join(mnt, "tree")
	if out, err := exec.Command("cp", "-r", src, tree).CombinedOutput(); err != nil {
		t.Fatalf("cp -r into davfs2: %v\n%s", err, out)
	}

	// Listings: ls's names, and a getdents64 of 128 KiB (the kernel's most).
	for _, sub := range []string{"", "empty", "dir1"} {
		want := dirNames(t, filepath.Join(src, sub))
		ls := exec.Command("ls", "-1", filepath.Join(tree, sub))
		ls.Env = append(os.Environ(), "LC_ALL=C")
		out, err := ls.CombinedOutput()
		if err != nil {
			t.Fatalf("ls %s through davfs2: %v\n%s", sub, err, out)
		}
		if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); !slices.Equal(got, want) {
			t.Fatalf("ls %s: %q, want %q", sub, got, want)
		}
	}
	getdents128K(t, filepath.Join(tree, "empty"))
	diffTrees(t, src, tree)

	// Rename a file and a directory, delete a file and a directory.
	for _, root := range []string{src, tree} {
		must(t, os.Rename(filepath.Join(root, "dir0", "f0-3.bin"), filepath.Join(root, "dir0", "renamed.bin")))
		must(t, os.Rename(filepath.Join(root, "dir1"), filepath.Join(root, "dir1-moved")))
		must(t, os.Remove(filepath.Join(root, "dir2", "f2-5.bin")))
		must(t, os.RemoveAll(filepath.Join(root, "dir3")))
	}
	diffTrees(t, src, tree)

	// The vault side, after davfs2 has uploaded everything (umount waits).
	unmountDavfs2()
	stopServe(t, d)
	d = nil
	exported := filepath.Join(t.TempDir(), "out")
	run(t, "", "export", "--passfile", pf, dir, exported).want(t, 0)
	diffTrees(t, src, filepath.Join(exported, "tree"))
}

// davfs2Mount mounts url on mnt with davfs2 and conf, and returns a
// function that unmounts it (waiting for davfs2's uploads); the unmount
// also runs when the test ends, so nothing stays mounted.
func davfs2Mount(t *testing.T, url, mnt, conf string) func() {
	t.Helper()
	if out, err := exec.Command("mount.davfs", url, mnt, "-o", "conf="+conf).CombinedOutput(); err != nil {
		t.Fatalf("mount.davfs: %v\n%s", err, out)
	}
	mounted := func() bool { fs, err := mountType(mnt); return err == nil && fs == "fuse" }
	unmount := func() {
		t.Helper()
		if !mounted() {
			return
		}
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			_ = exec.Command("umount", "-l", mnt).Run()
			t.Errorf("umount of davfs2: %v\n%s", err, out)
		}
		if mounted() {
			t.Errorf("davfs2 still mounted on %s", mnt)
		}
	}
	t.Cleanup(unmount)
	if !mounted() {
		t.Fatalf("mount.davfs succeeded but %s is not a fuse mount", mnt)
	}
	return unmount
}

// dirNames lists dir's names sorted as ls -1 sorts them in the C locale.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// getdents64 with a 128 KiB buffer: davfs2 with its default buf_size
// answers EINVAL to this.
func getdents128K(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(dir)
	must(t, err)
	defer f.Close()
	buf := make([]byte, 128<<10)
	n, err := syscall.Getdents(int(f.Fd()), buf)
	if err != nil || n <= 0 || !bytes.Contains(buf[:n], []byte("nnnn")) {
		t.Fatalf("getdents64(%s, 128 KiB): %d %v", dir, n, err)
	}
}

// davfs2CacheDir makes a cache directory that mount.davfs can use: it
// drops to the group davfs2, and t.TempDir's parent is not searchable by
// it, so the directory is made directly under TMPDIR, group davfs2, 0770.
func davfs2CacheDir(t *testing.T) string {
	t.Helper()
	g, err := user.LookupGroup("davfs2")
	must(t, err)
	gid, err := strconv.Atoi(g.Gid)
	must(t, err)
	dir, err := os.MkdirTemp("", "davfs2-cache-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chown(dir, 0, gid))
	must(t, os.Chmod(dir, 0o770))
	return dir
}
