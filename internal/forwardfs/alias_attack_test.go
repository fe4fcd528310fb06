package forwardfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestConflictAliasAttack: the storage cannot choose names through the
// sync-conflict rule. A copy of private/key's backing file planted in
// public/ as "<encrypted name of readme><crafted suffix>" (".sh", a bidi
// override, a newline, an escape sequence) is neither listed nor
// reachable; planted under a valid conflict name it is listed, and reads
// as EIO on a bound vault (format 2), as the planted contents on format
// 1. A real Syncthing copy is listed and readable, read-only
// (EROFS, no write bits) until adopted by a rename, and removable. A
// displayed name is never listed twice: a real entry "readme (1)" hides a
// copy shown under that name.
func TestConflictAliasAttack(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	pub, priv := filepath.Join(v.Mnt, "public"), filepath.Join(v.Mnt, "private")
	must(t, os.Mkdir(pub, 0o755))
	must(t, os.Mkdir(priv, 0o755))
	must(t, os.WriteFile(filepath.Join(pub, "readme"), []byte("public text"), 0o644))
	must(t, os.WriteFile(filepath.Join(pub, "readme (1)"), []byte("real (1)"), 0o644))
	must(t, os.WriteFile(filepath.Join(priv, "key"), []byte("SECRET"), 0o600))
	must(t, v.Srv.Unmount())

	pubB, pubID := backingDir(t, v, "public")
	privB, privID := backingDir(t, v, "private")
	readme, err := v.Tree.Name(pubID, "readme")
	must(t, err)
	key, err := v.Tree.Name(privID, "key")
	must(t, err)
	secret, err := os.ReadFile(filepath.Join(privB, key.Backing))
	must(t, err)
	plant := func(name string) { must(t, os.WriteFile(filepath.Join(pubB, name), secret, 0o644)) }
	crafted := []string{".sh", "\u202ehs.txt", "\n.sh", "\x1b[2J", " (1)\u202e", " copy"}
	for _, sfx := range crafted {
		plant(readme.Backing + sfx)
	}
	plant(readme.Backing + " (1)") // hidden by the real "readme (1)"
	const sync = ".sync-conflict-20261122-101010-ABCDEFG"
	const sync2 = ".sync-conflict-20261122-101011-ABCDEFG"
	pubData, err := os.ReadFile(filepath.Join(pubB, readme.Backing))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(pubB, readme.Backing+sync), pubData, 0o644))
	must(t, os.WriteFile(filepath.Join(pubB, readme.Backing+sync2), pubData, 0o644))
	// private/key's contents under a valid conflict name of readme.
	const sync3 = ".sync-conflict-20261122-101012-ABCDEFG"
	plant(readme.Backing + sync3)

	v.Remount(t)
	// Cold lookups first, then the listing.
	for _, sfx := range crafted {
		if _, err := os.Lstat(filepath.Join(pub, "readme"+sfx)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("crafted suffix %q reachable: %v", sfx, err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(pub, "readme (1)")); err != nil || string(got) != "real (1)" {
		t.Fatalf("readme (1) = %q, %v; want the real entry", got, err)
	}
	want := []string{"readme", "readme (1)", "readme" + sync, "readme" + sync2, "readme" + sync3}
	slices.Sort(want)
	if got := listNames(t, pub); !slices.Equal(got, want) {
		t.Fatalf("listing %q, want %q", got, want)
	}
	// Another file's contents under a conflict name of readme: a bound
	// vault (format 2) checks an alias's contents against the place of
	// the name it is an alias of, readme's, and private/key's are bound
	// to theirs: EIO (docs/format.md §14, "Sync conflicts"). Format 1
	// does not bind contents to a place (§11, "Location"): the name rule
	// keeps the storage from choosing the name shown, not the contents.
	got, err := os.ReadFile(filepath.Join(pub, "readme"+sync3))
	if v.VaultID != nil {
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("bound vault: another file's contents under a conflict name read %q, %v; want EIO", got, err)
		}
	} else if err != nil || string(got) != "SECRET" {
		t.Errorf("format 1: %q, %v; want the planted contents (not bound to a place)", got, err)
	}
	must(t, os.Remove(filepath.Join(pub, "readme"+sync3)))

	copyPath := filepath.Join(pub, "readme"+sync)
	if got, err := os.ReadFile(copyPath); err != nil || string(got) != "public text" {
		t.Fatalf("read conflict copy: %q %v", got, err)
	}
	fi, err := os.Stat(copyPath)
	must(t, err)
	if fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("conflict copy mode %v has write bits", fi.Mode())
	}
	if f, err := os.OpenFile(copyPath, os.O_WRONLY, 0); !errors.Is(err, syscall.EROFS) {
		t.Errorf("open for writing: %v, want EROFS", err)
		if err == nil {
			f.Close()
		}
	}
	for what, err := range map[string]error{
		"truncate": os.Truncate(copyPath, 0),
		"chmod":    os.Chmod(copyPath, 0o600),
		"utimens":  unix.UtimesNano(copyPath, []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}),
		"setxattr": unix.Setxattr(copyPath, "user.x", []byte("y"), 0),
	} {
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", what, err)
		}
	}
	// Adopt: a rename gives the copy an encrypted name of its own.
	adopted := filepath.Join(pub, "readme.adopted")
	must(t, os.Rename(copyPath, adopted))
	must(t, os.WriteFile(adopted, []byte("edited"), 0o644))
	must(t, os.Remove(filepath.Join(pub, "readme"+sync2)))
	want = []string{"readme", "readme (1)", "readme.adopted"}
	if got := listNames(t, pub); !slices.Equal(got, want) {
		t.Fatalf("listing after adopt/remove %q, want %q", got, want)
	}
	v.Remount(t)
	if got, err := os.ReadFile(adopted); err != nil || string(got) != "edited" {
		t.Fatalf("adopted copy after remount: %q %v", got, err)
	}
}

// backingDir returns the backing path and ID of top-level directory name.
func backingDir(t *testing.T, v *mounttest.Vault, name string) (string, []byte) {
	t.Helper()
	rootfd, err := backing.OpenRoot(v.Cipher)
	must(t, err)
	defer backing.Close(rootfd)
	rootID, err := v.Tree.DirIDs().ReadRoot(rootfd)
	must(t, err)
	n, err := v.Tree.Name(rootID, name)
	must(t, err)
	fd, err := backing.OpenSubdir(rootfd, n.Backing)
	must(t, err)
	defer backing.Close(fd)
	id, err := v.Tree.DirIDs().Read(fd, v.Tree.Place(rootID, n))
	must(t, err)
	return filepath.Join(v.Cipher, n.Backing), id
}
