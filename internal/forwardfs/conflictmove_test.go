package forwardfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
)

// TestSyncConflictOfKnownFile: Syncthing makes a conflict copy by renaming
// the file it replaces to "<encname>.sync-conflict-…" and putting the
// winner in its place, while the mount still knows the old file (same
// backing inode) under the ordinary name. The copy must read back the old
// contents under its own name, and the ordinary name the new ones; the
// mount used to find the copy's inode already known as "note.txt", resolve
// it through that stale name, and answer ENOENT.
func TestSyncConflictOfKnownFile(t *testing.T) {
	v := mounttest.NewVault(t, func(o *mount.Options) { o.SharedStorage = true })
	p := filepath.Join(v.Mnt, "note.txt")
	must(t, os.WriteFile(p, []byte("old"), 0o644))
	if got, err := os.ReadFile(p); err != nil || string(got) != "old" {
		t.Fatalf("read: %q %v", got, err)
	}
	bf := mounttest.BackingFiles(t, v.Cipher)
	if len(bf) != 1 {
		t.Fatalf("backing %v", bf)
	}
	const suffix = ".sync-conflict-20261123-142758-3M2RA5Q"
	must(t, os.Rename(bf[0], bf[0]+suffix))

	// The mount still knows the old inode as note.txt; the copy is found
	// first (before note.txt is looked up again) and after.
	if got, err := os.ReadFile(p + suffix); err != nil || string(got) != "old" {
		t.Fatalf("conflict copy of a known file: %q, %v", got, err)
	}
	must(t, os.WriteFile(filepath.Join(v.Mnt, "winner"), []byte("new"), 0o644))
	for _, b := range mounttest.BackingFiles(t, v.Cipher) {
		if b != bf[0]+suffix {
			// The winner's ciphertext is bound to its own file ID, not to
			// its name: renamed into place it reads as note.txt.
			must(t, os.Rename(b, bf[0]))
		}
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "new" {
		t.Fatalf("note.txt after the sync: %q, %v", got, err)
	}
	if got, err := os.ReadFile(p + suffix); err != nil || string(got) != "old" {
		t.Fatalf("conflict copy after note.txt was replaced: %q, %v", got, err)
	}
	ents, err := os.ReadDir(v.Mnt)
	must(t, err)
	for _, e := range ents {
		if _, err := os.ReadFile(filepath.Join(v.Mnt, e.Name())); err != nil {
			t.Errorf("read %s after readdir: %v", e.Name(), err)
		}
	}
}
