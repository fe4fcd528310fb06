package fresh_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	fr "github.com/encryptfs/encryptfs/internal/fresh"
	"golang.org/x/sys/unix"
)

// TestRenamedDirXattr: the xattrs of a directory renamed (with its
// parent) in an earlier batch of the same mount are told at its new
// entry: the engine finds the entry by the directory's ID, whose link the
// rename moved. The change is recorded (status is clean), and the
// directory's xattrs put back as the earlier batch recorded them are
// reported rolled back.
func TestRenamedDirXattr(t *testing.T) {
	must := mustFor(t)
	dir, state := newVault(t)
	mnt, s, unmount := mountWriter(t, dir, state)
	must(os.MkdirAll(filepath.Join(mnt, "top", "a"), 0o755))
	must(unix.Setxattr(filepath.Join(mnt, "top", "a"), "user.tag", []byte("old"), 0))
	must(s.Freshness().Flush())
	must(os.Rename(filepath.Join(mnt, "top", "a"), filepath.Join(mnt, "top", "b")))
	must(os.Rename(filepath.Join(mnt, "top"), filepath.Join(mnt, "moved")))
	must(s.Freshness().Flush())
	b := backingName(t, dir, "moved/b")
	old := xattrsOf(t, b)
	must(unix.Setxattr(filepath.Join(mnt, "moved", "b"), "user.tag", []byte("new"), 0))
	must(unmount())
	if rep := status(t, dir, state); rep.Status != fr.OK {
		t.Fatalf("the xattr set after the renames is not recorded:\n%s", rep)
	}

	now := xattrsOf(t, b)
	setXattrs(t, b, old)
	rep := status(t, dir, state)
	if rep.Status != fr.RolledBack || !strings.Contains(rep.String(), "/moved/b: xattrs") {
		t.Fatalf("the directory's older xattrs put back:\n%s", rep)
	}
	setXattrs(t, b, now)
	if rep := status(t, dir, state); rep.Status != fr.OK {
		t.Fatalf("the xattrs put back as they were:\n%s", rep)
	}
}

// xattrsOf returns the user.* xattrs of backing path p.
func xattrsOf(t *testing.T, p string) map[string][]byte {
	t.Helper()
	buf := make([]byte, 1<<16)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, k := range strings.Split(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(k, "user.") {
			continue
		}
		v := make([]byte, 1<<16)
		m, err := unix.Lgetxattr(p, k, v)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = v[:m]
	}
	return out
}

// setXattrs makes the user.* xattrs of backing path p those of x.
func setXattrs(t *testing.T, p string, x map[string][]byte) {
	t.Helper()
	for k := range xattrsOf(t, p) {
		if err := unix.Lremovexattr(p, k); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range x {
		if err := unix.Lsetxattr(p, k, v, 0); err != nil {
			t.Fatal(err)
		}
	}
}
