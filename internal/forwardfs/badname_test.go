package forwardfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// TestShowUndecryptable: entries whose backing names do not decrypt (a
// tampered file name, a tampered directory name, a foreign file) are left
// out of the listing by default, and with ShowUndecryptable are listed as
// "<backing name>.encryptfs-bad-name", can be read (contents do not depend
// on the name), renamed to a proper name and removed. A good entry cannot
// be reached under such a name. On a bound vault (format 2) the contents
// do depend on the name: see testShowUndecryptableBound.
func TestShowUndecryptable(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	must(t, os.WriteFile(filepath.Join(v.Mnt, "doc.txt"), []byte("contents"), 0o644))
	must(t, os.Mkdir(filepath.Join(v.Mnt, "dir"), 0o755))
	must(t, os.WriteFile(filepath.Join(v.Mnt, "dir", "inner"), []byte("inner"), 0o644))
	must(t, v.Srv.Unmount())

	// Damage both names (one flipped character fails AES-SIV) and add a
	// file a sync tool might drop into CIPHERDIR.
	var badFile, badDir string
	for _, p := range mounttest.BackingFiles(t, v.Cipher) {
		st, err := os.Stat(p)
		must(t, err)
		name := filepath.Base(p)
		bad := flipFirst(name)
		must(t, os.Rename(p, filepath.Join(v.Cipher, bad)))
		if st.IsDir() {
			badDir = bad
		} else {
			badFile = bad
		}
	}
	must(t, os.WriteFile(filepath.Join(v.Cipher, "desktop.ini"), []byte("[x]"), 0o644))
	sfx := tree.BadNameSuffix

	// Default: hidden, and not reachable under the marked name.
	v.Remount(t)
	if names := listNames(t, v.Mnt); len(names) != 0 {
		t.Fatalf("default listing %v, want empty", names)
	}
	if _, err := os.Stat(filepath.Join(v.Mnt, badFile+sfx)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat without the option: %v", err)
	}

	v.RemountWith(t, func(o *mount.Options) { o.ShowUndecryptable = true })
	if v.VaultID != nil {
		testShowUndecryptableBound(t, v, badFile, badDir)
		return
	}
	// A cold lookup first (no listing has been read).
	if got, err := os.ReadFile(filepath.Join(v.Mnt, badFile+sfx)); err != nil || string(got) != "contents" {
		t.Fatalf("read bad-named file: %q %v", got, err)
	}
	want := []string{badDir + sfx, badFile + sfx, "desktop.ini" + sfx}
	slices.Sort(want)
	if names := listNames(t, v.Mnt); !slices.Equal(names, want) {
		t.Fatalf("listing %v, want %v", names, want)
	}
	if got, err := os.ReadFile(filepath.Join(v.Mnt, badDir+sfx, "inner")); err != nil || string(got) != "inner" {
		t.Fatalf("read in bad-named dir: %q %v", got, err)
	}
	// A foreign file has no valid header: EIO, never its bytes.
	if _, err := os.ReadFile(filepath.Join(v.Mnt, "desktop.ini"+sfx)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read foreign file: %v, want EIO", err)
	}

	// Recover by renaming; remove the foreign file.
	must(t, os.Rename(filepath.Join(v.Mnt, badFile+sfx), filepath.Join(v.Mnt, "recovered.txt")))
	must(t, os.Rename(filepath.Join(v.Mnt, badDir+sfx), filepath.Join(v.Mnt, "dir2")))
	must(t, os.Remove(filepath.Join(v.Mnt, "desktop.ini"+sfx)))
	if names := listNames(t, v.Mnt); !slices.Equal(names, []string{"dir2", "recovered.txt"}) {
		t.Fatalf("listing after recovery %v", names)
	}
	if _, err := os.Lstat(filepath.Join(v.Cipher, "desktop.ini")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("foreign file not removed: %v", err)
	}
	// A good entry is not reachable under its backing name + suffix.
	for _, p := range mounttest.BackingFiles(t, v.Cipher) {
		if _, err := os.Stat(filepath.Join(v.Mnt, filepath.Base(p)+sfx)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("good entry %s reachable as a bad name: %v", filepath.Base(p), err)
		}
	}

	// Recovered for good: readable without the option.
	v.Remount(t)
	if got, err := os.ReadFile(filepath.Join(v.Mnt, "recovered.txt")); err != nil || string(got) != "contents" {
		t.Fatalf("recovered file: %q %v", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(v.Mnt, "dir2", "inner")); err != nil || string(got) != "inner" {
		t.Fatalf("recovered dir: %q %v", got, err)
	}
	if !strings.Contains(v.Log.String(), "undecryptable entry") {
		t.Errorf("daemon log does not report the undecryptable entries:\n%s", v.Log.String())
	}
}

// testShowUndecryptableBound is TestShowUndecryptable's second half on a
// bound vault (docs/format.md §14): a file and a directory are bound to
// the encrypted name they were made under, so under a damaged name they
// are misplaced. They are listed (with the option), but the file and
// everything in the directory read as EIO, a rename cannot recover them
// (it would bind misplaced contents to a new place: EIO), and the file
// and the foreign file can be removed.
func testShowUndecryptableBound(t *testing.T, v *mounttest.Vault, badFile, badDir string) {
	sfx := tree.BadNameSuffix
	// A cold lookup first (no listing has been read).
	if got, err := os.ReadFile(filepath.Join(v.Mnt, badFile+sfx)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read bad-named file: %q %v, want EIO", got, err)
	}
	want := []string{badDir + sfx, badFile + sfx, "desktop.ini" + sfx}
	slices.Sort(want)
	if names := listNames(t, v.Mnt); !slices.Equal(names, want) {
		t.Fatalf("listing %v, want %v", names, want)
	}
	if got, err := os.ReadFile(filepath.Join(v.Mnt, badDir+sfx, "inner")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read in bad-named dir: %q %v, want EIO", got, err)
	}
	if _, err := os.ReadFile(filepath.Join(v.Mnt, "desktop.ini"+sfx)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read foreign file: %v, want EIO", err)
	}
	for _, bad := range []string{badFile, badDir} {
		if err := os.Rename(filepath.Join(v.Mnt, bad+sfx), filepath.Join(v.Mnt, "recovered")); !errors.Is(err, syscall.EIO) {
			t.Errorf("rename %s: %v, want EIO", bad+sfx, err)
		}
	}
	must(t, os.Remove(filepath.Join(v.Mnt, badFile+sfx)))
	must(t, os.Remove(filepath.Join(v.Mnt, "desktop.ini"+sfx)))
	if names := listNames(t, v.Mnt); !slices.Equal(names, []string{badDir + sfx}) {
		t.Fatalf("listing after removal %v", names)
	}
	v.Remount(t)
	if names := listNames(t, v.Mnt); len(names) != 0 {
		t.Fatalf("listing without the option %v, want empty", names)
	}
	if !strings.Contains(v.Log.String(), "undecryptable entry") {
		t.Errorf("daemon log does not report the undecryptable entries:\n%s", v.Log.String())
	}
}

// flipFirst changes the first character of a base64url name.
func flipFirst(name string) string {
	c := byte('A')
	if name[0] == 'A' {
		c = 'B'
	}
	return string(c) + name[1:]
}

// listNames returns the sorted names in dir.
func listNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}
