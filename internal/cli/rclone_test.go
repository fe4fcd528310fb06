package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// rcloneRemote is an rclone remote served from a local directory on
// 127.0.0.1, standing in for a cloud store: nothing leaves the machine.
type rcloneRemote struct {
	conf   string // an empty rclone config: remotes are given inline
	remote string // the inline remote, "…:" (append a path)
	dir    string // the directory the server serves
}

// rclone runs rclone with the remote's config and returns its output.
func (r *rcloneRemote) rclone(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("rclone", append([]string{"--config", r.conf}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("rclone %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// serveRclone starts rclone serve KIND (webdav or sftp) on 127.0.0.1 for a
// new directory and returns the remote that reaches it.
func serveRclone(t *testing.T, kind string) *rcloneRemote {
	t.Helper()
	requireTool(t, "rclone")
	r := &rcloneRemote{conf: filepath.Join(t.TempDir(), "rclone.conf"), dir: t.TempDir()}
	must(t, os.WriteFile(r.conf, nil, 0o600))
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	switch kind {
	case "webdav":
		startDaemon(t, "rclone", "--config", r.conf, "serve", "webdav", "--addr", addr, r.dir)
		r.remote = ":webdav,url='http://" + addr + "':"
	case "sftp":
		// rclone keeps the host keys it generates in its cache dir.
		startDaemon(t, "rclone", "--config", r.conf, "--cache-dir", t.TempDir(), "serve", "sftp",
			"--addr", addr, "--user", "u", "--pass", "p", "--authorized-keys", "", r.dir)
		pass := strings.TrimSpace(r.rclone(t, "obscure", "p"))
		r.remote = ":sftp,host=127.0.0.1,port=" + strconv.Itoa(port) + ",user=u,pass='" + pass + "':"
	default:
		t.Fatalf("unknown rclone server %q", kind)
	}
	waitPort(t, port)
	return r
}

// mount mounts the remote's path on mnt with rclone mount, with the VFS
// cache mode rclone's docs recommend for applications that write files
// in place (full), and returns the daemon; the mount is undone in
// t.Cleanup.
func (r *rcloneRemote) mount(t *testing.T, path, mnt string) *daemon {
	t.Helper()
	d := startDaemonEnv(t, fusermountEnv(t), "rclone", "--config", r.conf, "mount", r.remote+path, mnt,
		"--vfs-cache-mode", "full", "--cache-dir", t.TempDir(), "--dir-cache-time", "1s")
	t.Cleanup(func() {
		if typ, err := mountType(mnt); err == nil && typ == "fuse.rclone" {
			fusermountU(t, mnt)
		}
	})
	waitFor(t, "rclone mount on "+mnt, func() bool {
		typ, err := mountType(mnt)
		return err == nil && typ == "fuse.rclone"
	})
	return d
}

// unmount unmounts an rclone mount and waits for its daemon to exit.
func (r *rcloneRemote) unmount(t *testing.T, d *daemon, mnt string) {
	t.Helper()
	fusermountU(t, mnt)
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("rclone mount did not exit:\n%s", d.out.String())
	}
}

// waitUploaded waits (at most 30 s) until the server's directory holds
// every file of the rclone mount's directory with the same size: rclone's
// VFS cache uploads written files in the background.
func waitUploaded(t *testing.T, mounted, served string) {
	t.Helper()
	sizes := func(dir string) map[string]int64 {
		m := map[string]int64{}
		filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() {
				if fi, err := e.Info(); err == nil {
					rel, _ := filepath.Rel(dir, p)
					m[rel] = fi.Size()
				}
			}
			return nil
		})
		return m
	}
	want := sizes(mounted)
	for range 300 {
		got := sizes(served)
		same := len(got) == len(want)
		for k, v := range want {
			same = same && got[k] == v
		}
		if same {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("rclone did not upload %s within 30 s", mounted)
}

// TestRcloneForward: a vault whose CIPHERDIR is on an rclone mount of a
// WebDAV remote (rclone serve webdav on 127.0.0.1). init, mount, untar,
// compare; remount, compare; then rclone mount again with an empty VFS
// cache, so every byte comes from the remote, compare, and fsck: clean,
// with one note that the store has no xattrs (rclone's mount answers
// every xattr call with EOPNOTSUPP or EIO), and tar --xattrs works.
func TestRcloneForward(t *testing.T) {
	fstest.RequireFUSE(t)
	remote := serveRclone(t, "webdav")
	src := t.TempDir()
	makeTree(t, src)
	// rclone's mount has no symlinks (rclone 1.60): the tree has none.
	must(t, os.Remove(filepath.Join(src, "link")))
	tarball := filepath.Join(t.TempDir(), "tree.tar")
	if out, err := exec.Command("tar", "-C", src, "-cf", tarball, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}

	rmnt := t.TempDir()
	rd := remote.mount(t, "", rmnt)
	cipher := filepath.Join(rmnt, "vault")
	pf := writePassfile(t, "pw")
	run(t, "", append(append([]string{"init", "--passfile", pf}, cheapKDF...), cipher)...).want(t, 0)
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", pf, cipher, mnt).want(t, 0)
	if out, err := exec.Command("tar", "-C", mnt, "-xf", tarball).CombinedOutput(); err != nil {
		t.Fatalf("untar into the mount: %v %s", err, out)
	}
	diffTrees(t, src, mnt)
	// A symlink fails as rclone fails it, and leaves nothing behind (fsck
	// below); short and long targets (a long one has a sidecar).
	for _, target := range []string{"t", strings.Repeat("t", 2000)} {
		if err := os.Symlink(target, filepath.Join(mnt, "link")); err == nil {
			t.Errorf("symlink on an rclone mount succeeded (rclone 1.60 has none)")
		}
	}
	if out, err := exec.Command("tar", "--xattrs", "-C", mnt, "-cf", filepath.Join(t.TempDir(), "x.tar"), ".").CombinedOutput(); err != nil {
		t.Errorf("tar --xattrs of the mount: %v %s", err, out)
	}
	run(t, "", "unmount", mnt).want(t, 0)
	run(t, "", "mount", "--passfile", pf, cipher, mnt).want(t, 0)
	diffTrees(t, src, mnt)
	run(t, "", "unmount", mnt).want(t, 0)

	waitUploaded(t, rmnt, remote.dir)
	remote.unmount(t, rd, rmnt)
	remote.mount(t, "", rmnt) // a new, empty VFS cache
	run(t, "", "mount", "--passfile", pf, cipher, mnt).want(t, 0)
	diffTrees(t, src, mnt)
	run(t, "", "unmount", mnt).want(t, 0)

	r := run(t, "", "fsck", "--passfile", pf, cipher)
	if r.code != 0 || strings.Count(r.stdout, "note:") != 1 || !strings.Contains(r.stdout, "extended attributes") {
		t.Fatalf("fsck on the rclone mount: exit %d, want 0 and one note on xattrs\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// copiedRe matches rclone -v's line for one file transferred.
var copiedRe = regexp.MustCompile(`(?m)INFO  : (.+): Copied \((new|replaced existing)\)$`)

// transferredRe matches the file count of rclone's final stats
// ("Transferred:  3 / 3, 100%"; absent when nothing was transferred).
var transferredRe = regexp.MustCompile(`(?m)^Transferred:\s+(\d+) / \d+, 100%$`)

// TestRcloneBackup: the reverse view of a plaintext directory synced (with
// --links, so that symlinks travel as .rclonelink files) to an
// SFTP remote (rclone serve sftp on 127.0.0.1; SFTP keeps modification
// times, so rclone sync compares size and time and copies only what
// changed). After a few plaintext files change, the second sync copies
// exactly their ciphertext and nothing else; a restore with rclone copy
// mounts forward and diff -r finds it equal to the plaintext.
func TestRcloneBackup(t *testing.T) {
	fstest.RequireFUSE(t)
	remote := serveRclone(t, "sftp")
	plain := t.TempDir()
	makeTree(t, plain)
	pf := writePassfile(t, "pw")
	run(t, "", append(append([]string{"init", "--reverse", "--passfile", pf}, cheapKDF...), plain)...).want(t, 0)
	view := t.TempDir()
	cleanupMount(t, view)
	backup := func() []string {
		t.Helper()
		run(t, "", "mount", "--reverse", "--passfile", pf, plain, view).want(t, 0)
		out := remote.rclone(t, "sync", "-v", "--links", view, remote.remote+"backup")
		run(t, "", "unmount", view).want(t, 0)
		var copied []string
		for _, m := range copiedRe.FindAllStringSubmatch(out, -1) {
			copied = append(copied, m[1])
		}
		// rclone's own stats agree with the per-file lines.
		stats := "0"
		if m := transferredRe.FindStringSubmatch(out); m != nil {
			stats = m[1]
		}
		if stats != strconv.Itoa(len(copied)) {
			t.Fatalf("rclone's stats say %s files transferred, its log lists %d:\n%s", stats, len(copied), out)
		}
		return copied
	}
	first := backup()
	viewFiles := len(fileSums(t, filepath.Join(remote.dir, "backup")))
	if len(first) != viewFiles || viewFiles < 40 {
		t.Fatalf("first sync copied %d files, the backup holds %d", len(first), viewFiles)
	}
	if again := backup(); len(again) != 0 {
		t.Fatalf("a sync with nothing changed copied %v", again)
	}

	// Change three files (one rewritten at the same size, one appended
	// to, one truncated), all with a new modification time.
	before := fileSums(t, filepath.Join(remote.dir, "backup"))
	changed := []string{"dir0/f0-3.bin", "dir1/f1-6.bin", "dir2/inner/f2-3.bin"}
	must(t, os.WriteFile(filepath.Join(plain, changed[0]), fileContent("changed", 4096), 0o644))
	f, err := os.OpenFile(filepath.Join(plain, changed[1]), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.Write([]byte("appended"))
	must(t, err)
	must(t, f.Close())
	must(t, os.Truncate(filepath.Join(plain, changed[2]), 100))
	later := time.Now().Add(time.Minute)
	for _, c := range changed {
		must(t, os.Chtimes(filepath.Join(plain, c), later, later))
	}
	second := backup()
	if len(second) != len(changed) {
		t.Fatalf("after changing %d files the sync copied %d: %v", len(changed), len(second), second)
	}
	after := fileSums(t, filepath.Join(remote.dir, "backup"))
	differ := 0
	for k, v := range after {
		if before[k] != v {
			differ++
		}
	}
	if differ != len(changed) || len(after) != len(before) {
		t.Fatalf("%d backup files differ after the second sync (of %d), want %d", differ, len(after), len(changed))
	}

	// Restore and read.
	restore := filepath.Join(t.TempDir(), "restore")
	remote.rclone(t, "copy", "--links", remote.remote+"backup", restore)
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--ro", "--passfile", pf, restore, mnt).want(t, 0)
	diffTrees(t, plain, mnt, ".encryptfs.reverse.conf")
	run(t, "", "unmount", mnt).want(t, 0)
	fsckClean(t, pf, restore)
}
