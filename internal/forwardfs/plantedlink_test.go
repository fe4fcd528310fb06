package forwardfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
)

// TestSymlinkAsDirID: a symlink planted as a directory's encryptfs.dirid
// (to a file of 16 bytes or to anything else) makes the directory corrupt,
// EIO, like a FIFO or a missing ID (docs/format.md §7): not the ELOOP of
// the O_NOFOLLOW open that refuses to follow it. Found by
// TestHostileCiphertext (internal/cli).
func TestSymlinkAsDirID(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	must(t, os.Mkdir(filepath.Join(v.Mnt, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(v.Mnt, "d", "f"), []byte("x"), 0o644))
	must(t, v.Srv.Unmount())
	id := filepath.Join(mounttest.BackingFiles(t, v.Cipher)[0], names.DirIDFile)
	must(t, os.Remove(id))
	must(t, os.Symlink(filepath.Join(v.Cipher, names.DirIDFile), id)) // the root's ID: 16 valid-looking bytes
	v.MountAgain(t, nil)
	if _, err := os.ReadDir(filepath.Join(v.Mnt, "d")); !errors.Is(err, syscall.EIO) {
		t.Errorf("readdir: %v, want EIO", err)
	}
	if _, err := os.Stat(filepath.Join(v.Mnt, "d", "f")); !errors.Is(err, syscall.EIO) {
		t.Errorf("stat d/f: %v, want EIO", err)
	}
}
