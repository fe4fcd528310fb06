package vault

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCreateFullDiskLeavesDirEmpty: Create on a file system with room for
// the root's dirid but not for the config fails and leaves the directory
// empty, so that it can be retried: the same creation code as encryptfs
// init (internal/session.Create).
func TestCreateFullDiskLeavesDirEmpty(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=4k"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	if _, err := Create(dir, testPassword, cheap); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("Create on a full file system: %v", err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("failed Create left %v (%v)", ents, err)
	}
}
