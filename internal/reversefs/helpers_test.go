package reversefs_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"github.com/encryptfs/encryptfs/internal/reversefs"
	"golang.org/x/sys/unix"
)

var testPassword = []byte("reverse test password")

// TestMain fails the suite if a test left a mount behind.
func TestMain(m *testing.M) { mounttest.Main(m) }

// What the tests here share with the package's internal tests
// (export_test.go).
const testChunk = reversefs.TestChunk

var (
	fill    = reversefs.Fill
	newRoot = reversefs.NewTestRoot
)

// initPlain writes a reverse config (cheapest KDF) into plain and returns
// it with its master key.
func initPlain(t *testing.T, plain string) (*config.Config, []byte) {
	t.Helper()
	k, err := kdf.Cheapest(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c, master, err := config.Create(config.NewParams(string(content.AES256SIV), testChunk, k), testPassword, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := config.WriteFileAtomic(plain, reversefs.ConfigName, data); err != nil {
		t.Fatal(err)
	}
	return c, master
}

// mountView mounts the reverse view of plain on a new temp dir; it is
// unmounted in t.Cleanup even if the test fails. unmount can also be called
// earlier (a second call does nothing).
func mountView(t *testing.T, plain string, c *config.Config, master []byte, o reversefs.Options) (mnt string, unmount func()) {
	t.Helper()
	fstest.RequireFUSE(t)
	mnt = t.TempDir()
	logs := &mounttest.SyncWriter{}
	o.Logger = log.New(logs, "", 0)
	root, err := newRoot(t, plain, c.Params, master, o)
	if err != nil {
		t.Fatal(err)
	}
	mounttest.Track(mnt)
	srv, err := mount.MountReverse(mount.ReverseOptions{PlainDir: plain, MountPoint: mnt, Root: root, Logger: o.Logger})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unmount = func() {
		once.Do(func() {
			if err := srv.Unmount(); err != nil {
				t.Errorf("unmount: %v", err)
				srv.TryUnmount() // last resort: leave no mount behind
			}
			if l := logs.String(); l != "" {
				t.Logf("server log:\n%s", l)
			}
		})
	}
	t.Cleanup(unmount)
	return mnt, unmount
}

// testTime is the mtime the fixture sets, so snapshots can compare times.
var testTime = time.Date(2024, 2, 29, 12, 34, 56, 789_000_000, time.UTC)

// makeTree fills plain with the fixture: files of sizes around the chunk
// size, long names, short and 4000-byte symlink targets, nested
// directories, several modes, a fifo and fixed mtimes.
func makeTree(t *testing.T, plain string) {
	t.Helper()
	long := strings.Repeat("L", 200)
	files := map[string]int{
		"empty": 0, "one": 1, "chunk-1": testChunk - 1, "chunk": testChunk, "chunk+1": testChunk + 1,
		"many": 5*testChunk + 17, "d1/nested": 3000, "d1/d2/deep": 2 * testChunk,
		long: 100, "d1/" + long + "x": testChunk + 3, "spaces and ünïcode.txt": 42,
		"skip.tmp": 10, "d1/skip.tmp": 10, "keep/skip": 5, "d1/sub/inner": 7,
	}
	dirs := []string{"d1", "d1/d2", "d1/sub", "keep", "emptydir", "d1/" + strings.Repeat("D", 180)}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(plain, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, size := range files {
		if err := os.WriteFile(filepath.Join(plain, name), fill(name, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"link": "one", "d1/up": "../chunk", "abs": "/etc/hostname",
		"longtarget": strings.Repeat("t/", 2000), "d1/" + long + "link": "x",
		"dangling": "does/not/exist",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(plain, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(plain, "fifo"), 0o640); err != nil {
		t.Fatal(err)
	}
	// A hard link: the view shows it under each path with that path's
	// fileID; cp -a links the copies, and either header decrypts.
	if err := os.Link(filepath.Join(plain, "chunk+1"), filepath.Join(plain, "d1", "hardlink")); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"one": 0o600, "chunk": 0o755, "d1/nested": 0o444, "d1/d2": 0o700} {
		if err := os.Chmod(filepath.Join(plain, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	setTimes(t, plain)
}

// setTimes sets every mtime and atime below dir (not dir itself) to
// testTime, children before their directory.
func setTimes(t *testing.T, dir string) {
	t.Helper()
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			paths = append(paths, p)
		}
		return err
	})
	ts := []unix.Timespec{unix.NsecToTimespec(testTime.UnixNano()), unix.NsecToTimespec(testTime.UnixNano())}
	for i := len(paths) - 1; i >= 0; i-- {
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, paths[i], ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot describes every entry below dir (dir itself excluded, skip
// excluded): type, permission bits, mtime, and content hash or link target.
// Directory mtimes are left out when withDirTimes is false.
func snapshot(t *testing.T, dir string, withDirTimes bool, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		for _, s := range skip {
			if rel == s {
				return nil
			}
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		desc := fmt.Sprintf("mode=%o", st.Mode)
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || withDirTimes {
			desc += fmt.Sprintf(" mtime=%d.%09d", st.Mtim.Sec, st.Mtim.Nsec)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			desc += fmt.Sprintf(" size=%d sha256=%s", len(data), hex.EncodeToString(sum[:]))
		case unix.S_IFLNK:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " target=" + target
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffSnapshots reports the paths whose descriptions differ.
func diffSnapshots(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, "only in first: "+k)
		} else if v != w {
			out = append(out, fmt.Sprintf("%s: %s != %s", k, v, w))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "only in second: "+k)
		}
	}
	return out
}

// run runs a command, failing the test with its output on error.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || len(out) > 0 {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		t.Fatalf("%s %v: %v", name, args, err)
	}
}
