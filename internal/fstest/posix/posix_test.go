package posix

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSuiteOnTempDir runs the suite against the real filesystem under
// t.TempDir(), where every check must pass.
func TestSuiteOnTempDir(t *testing.T) {
	Run(t, t.TempDir())
}

// TestSuiteOnTmpfs runs the suite against a private tmpfs, the reference
// the suite was written against.
func TestSuiteOnTmpfs(t *testing.T) {
	Run(t, mountTmpfs(t))
}

// mountTmpfs mounts a tmpfs on a temporary directory (root only) and
// unmounts it at cleanup.
func mountTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmpfs test needs root, and CI must run it")
		}
		t.Skip("skipped: mounting tmpfs needs root")
	}
	dir := searchableTempDir(t)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=256m,mode=0755"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// TestOtherUserOnTmpfs runs the second-user checks on a private tmpfs.
func TestOtherUserOnTmpfs(t *testing.T) {
	RunAsOtherUser(t, mountTmpfs(t))
}

// TestOtherUserOnTempDir runs them under t.TempDir(), whose ancestors are
// made searchable first (t.TempDir's parent is 0700).
func TestOtherUserOnTempDir(t *testing.T) {
	RunAsOtherUser(t, searchableTempDir(t))
}

// searchableTempDir is t.TempDir() with its 0700 parents opened to o+x, so
// that the uid 65534 helper can reach it.
func searchableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
