package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFreshnessRenamedDirWrite: freshness is told changes by directory ID
// (internal/engine, changes.go), so a directory renamed during a mount
// and then written in is found again by its ID for the batch. The write
// is recorded: the file put back as it was before, after a remount, is
// reported rolled back.
func TestFreshnessRenamedDirWrite(t *testing.T) {
	dir, pf, mnt := newMountableVault(t, "pw")
	status := func() result { return run(t, "", "freshness", "status", "--passfile", pf, dir) }
	backingOf := func(name string) string {
		r := run(t, "", "encrypt-path", "--passfile", pf, dir, name)
		r.want(t, 0)
		return filepath.Join(dir, strings.TrimSpace(r.stdout))
	}

	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.MkdirAll(filepath.Join(mnt, "top", "a"), 0o755))
	must(t, os.WriteFile(filepath.Join(mnt, "top", "a", "f"), []byte("the first version"), 0o644))
	run(t, "", "unmount", mnt).want(t, 0)
	status().want(t, 0)
	old := filepath.Join(t.TempDir(), "f")
	cpA(t, backingOf("/top/a/f"), old)

	// Rename the directory (and its parent), then write inside it, in
	// one mount: no batch comes between them.
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.Rename(filepath.Join(mnt, "top", "a"), filepath.Join(mnt, "top", "b")))
	must(t, os.Rename(filepath.Join(mnt, "top"), filepath.Join(mnt, "moved")))
	must(t, os.WriteFile(filepath.Join(mnt, "moved", "b", "f"), []byte("the second, longer version"), 0o644))
	run(t, "", "unmount", mnt).want(t, 0)
	status().want(t, 0)

	// The storage puts the first version back (same directory ID, same
	// name: the header binds it there).
	b := backingOf("/moved/b/f")
	now := filepath.Join(t.TempDir(), "now")
	cpA(t, b, now)
	must(t, os.Remove(b))
	cpA(t, old, b)
	r := status()
	r.want(t, ExitFreshRolledBack)
	if !strings.Contains(r.stdout, "/moved/b/f") {
		t.Errorf("status does not name /moved/b/f:\n%s", r.stdout)
	}
	run(t, "", "mount", "--passfile", pf, "--freshness", "strict", dir, mnt).want(t, ExitFreshRolledBack)
	must(t, os.Remove(b))
	cpA(t, now, b)
	status().want(t, 0)
}
