package backing

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// recorder keeps the ops an FS reports.
type recorder struct{ ops []Op }

func (r *recorder) Observe(ev Event) { r.ops = append(r.ops, ev.Op) }

// TestReplaceFile: the one atomic replace removes what stands at the
// temporary name (a symlink planted there is removed, not followed),
// replaces a symlink at the name instead of writing through it, syncs
// the directory when asked, and, with ReplaceKeepLeftover, refuses a
// leftover temporary (EEXIST) and leaves it as it is.
func TestReplaceFile(t *testing.T) {
	dir, root := setup(t)
	outside := filepath.Join(t.TempDir(), "target")
	must(t, os.WriteFile(outside, []byte("outside"), 0o600))
	must(t, os.Symlink(outside, filepath.Join(dir, "tmp")))
	must(t, os.Symlink(outside, filepath.Join(dir, "name")))
	rec := &recorder{}
	must(t, NewFS(rec).ReplaceFile(root, "tmp", root, "name", []byte("new"), 0o400, ReplaceSyncDir))
	if b, err := os.ReadFile(outside); err != nil || string(b) != "outside" {
		t.Fatalf("the symlinks' target: %q %v", b, err)
	}
	fi, err := os.Lstat(filepath.Join(dir, "name"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o400 {
		t.Fatalf("name: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "name")); string(b) != "new" {
		t.Fatalf("name holds %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("tmp left: %v", err)
	}
	if want := []Op{OpUnlink, OpWriteFile, OpRename, OpFsync}; !equalOps(rec.ops, want) {
		t.Fatalf("observed %v, want %v", rec.ops, want)
	}

	must(t, os.WriteFile(filepath.Join(dir, "tmp"), []byte("leftover"), 0o600))
	err = (*FS)(nil).ReplaceFile(root, "tmp", root, "name", []byte("newer"), 0o400, ReplaceKeepLeftover)
	if !errors.Is(err, unix.EEXIST) {
		t.Fatalf("with a leftover: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tmp")); string(b) != "leftover" {
		t.Fatalf("the leftover holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "name")); string(b) != "new" {
		t.Fatalf("name holds %q after a refused replace", b)
	}
}

func equalOps(a, b []Op) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
