package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"golang.org/x/sys/unix"
)

// TestFullVaultFreshness (issue 20, "A full CIPHERDIR and freshness"):
// a vault whose file system is full. The unmount says that its last
// freshness records could not be written (exit 29, one line); the next
// read-write mount works all the same (so that the user can delete
// files), and once there is room again its records catch up: status is
// clean after it.
func TestFullVaultFreshness(t *testing.T) {
	fstest.RequireFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	fsDir := t.TempDir()
	must(t, unix.Mount("tmpfs", fsDir, "tmpfs", 0, "size=3m"))
	t.Cleanup(func() { unix.Unmount(fsDir, unix.MNT_DETACH) })
	dir := filepath.Join(fsDir, "cipher")
	pf := writePassfile(t, "pw")
	run(t, "", append(append([]string{"init", "--passfile", pf}, cheapKDF...), dir)...).want(t, 0)
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.WriteFile(filepath.Join(mnt, "keep"), []byte("kept"), 0o644))
	run(t, "", "unmount", mnt).want(t, 0)

	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.MkdirAll(filepath.Join(mnt, "d", "e"), 0o755))
	f, err := os.Create(filepath.Join(mnt, "big"))
	must(t, err)
	chunk := make([]byte, 64<<10)
	for {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the vault: %v, want ENOSPC", err)
	}
	// The close gave back the space the engine reserved ahead: take
	// that too, beside the vault, so that nothing is left for the
	// mount's last records.
	filler := filepath.Join(fsDir, "filler")
	fill, err := os.Create(filler)
	must(t, err)
	for {
		if _, err = fill.Write(chunk[:4096]); err != nil {
			break
		}
	}
	fill.Close()
	r := run(t, "", "unmount", mnt)
	r.want(t, ExitUnrecorded)
	if !strings.Contains(r.stderr, "next mount writes them") {
		t.Errorf("unmount said: %s", r.stderr)
	}

	// A read-write mount of the full vault works, to free space.
	r = run(t, "", "mount", "--passfile", pf, dir, mnt)
	r.want(t, 0)
	must(t, os.Remove(filepath.Join(mnt, "big")))
	must(t, os.Remove(filler))
	if b, err := os.ReadFile(filepath.Join(mnt, "keep")); err != nil || string(b) != "kept" {
		t.Fatalf("keep: %q %v", b, err)
	}
	run(t, "", "unmount", mnt).want(t, 0)
	r = run(t, "", "freshness", "status", "--passfile", pf, dir)
	r.want(t, 0)
}
