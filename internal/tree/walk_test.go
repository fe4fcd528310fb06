package tree

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// TestWalk: Walk enters each directory once (pre-order Enter, post-order
// Leave) with its ID file read, offers non-entries to Other and entries
// to Entry in sorted order, goes into a directory only when asked, and
// never through a symlink.
func TestWalk(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string) {
		must(t, os.Mkdir(filepath.Join(dir, rel), 0o700))
		must(t, os.WriteFile(filepath.Join(dir, rel, names.DirIDFile), make([]byte, names.DirIDSize), 0o400))
	}
	must(t, os.WriteFile(filepath.Join(dir, names.DirIDFile), make([]byte, names.DirIDSize), 0o400))
	mk("B")
	mk("B/C")
	mk("D")
	must(t, os.Symlink("B", filepath.Join(dir, "A")))
	must(t, os.WriteFile(filepath.Join(dir, "encryptfs.conf"), nil, 0o600))
	rootfd, err := backing.OpenRoot(dir)
	must(t, err)
	defer backing.Close(rootfd)
	var log []string
	err = Walk(rootfd, nil, Walker{
		Sorted: true,
		Enter: func(d *WalkDir) (bool, error) {
			if d.ID.Err != nil || len(d.ID.Raw) != names.DirIDSize || d.ListErr != nil {
				t.Errorf("%s: ID %v, list %v", d.Rel, d.ID.Err, d.ListErr)
			}
			log = append(log, "enter "+d.Rel)
			return true, nil
		},
		Other: func(d *WalkDir, n string) error { log = append(log, "other "+filepath.Join(d.Rel, n)); return nil },
		Entry: func(d *WalkDir, n string, st unix.Stat_t, err error) (bool, any, error) {
			log = append(log, "entry "+filepath.Join(d.Rel, n))
			return n != "D", nil, err
		},
		Leave: func(d *WalkDir) error { log = append(log, "leave "+d.Rel); return nil },
	})
	must(t, err)
	want := []string{
		"enter .", "entry A", "entry B",
		"enter B", "entry B/C", "enter B/C", "other B/C/" + names.DirIDFile, "leave B/C", "other B/" + names.DirIDFile, "leave B",
		"entry D", "other encryptfs.conf", "other " + names.DirIDFile, "leave .",
	}
	if !slices.Equal(log, want) {
		t.Fatalf("walk:\n%q\nwant\n%q", log, want)
	}
}
