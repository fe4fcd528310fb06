package forwardfs_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestBoundFiveLinks: through the mount of a bound vault, a file gets five
// names (in the root, a subdirectory and under a long name), which the
// header's three slots cannot bind: the third moves the bindings to the
// file's links file (docs/format.md §14). Every name reads the contents
// and shows st_nlink right, before and after unlinks, a rename across
// directories and a remount; going back to two names removes the links
// file.
func TestBoundFiveLinks(t *testing.T) {
	v := mounttest.NewBoundVault(t, nil)
	m := func(p string) string { return filepath.Join(v.Mnt, p) }
	must(t, os.Mkdir(m("d"), 0o755))
	must(t, os.Mkdir(m("e"), 0o755))
	long := "d/" + strings.Repeat("l", 200)
	data := bytes.Repeat([]byte("five names, one file. "), 5000)
	must(t, os.WriteFile(m("a"), data, 0o644))
	names := []string{"a", "b", "d/c", long, "e/x"}
	for _, n := range names[1:] {
		must(t, os.Link(m("a"), m(n)))
	}
	check := func(when string, names []string) {
		t.Helper()
		var ino uint64
		for _, n := range names {
			var st unix.Stat_t
			must(t, unix.Lstat(m(n), &st))
			if int(st.Nlink) != len(names) {
				t.Errorf("%s: %s has nlink %d, want %d", when, n, st.Nlink, len(names))
			}
			if ino == 0 {
				ino = st.Ino
			} else if st.Ino != ino {
				t.Errorf("%s: %s has inode %d, want %d", when, n, st.Ino, ino)
			}
			got, err := os.ReadFile(m(n))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s: read %s: %d bytes, %v", when, n, len(got), err)
			}
		}
	}
	check("after 5 links", names)
	linksFiles := func() []string {
		got, err := filepath.Glob(filepath.Join(v.Cipher, bind.LinksPrefix+"*"))
		must(t, err)
		return got
	}
	if got := linksFiles(); len(got) != 1 {
		t.Fatalf("links files: %v, want 1", got)
	}
	// A write through one name, read through the others.
	data = append(data, "appended via d/c"...)
	must(t, os.WriteFile(m("d/c"), data, 0o644))
	check("after a write", names)

	must(t, os.Remove(m("b")))
	must(t, os.Remove(m(long)))
	names = []string{"a", "d/c", "e/x"}
	check("after 2 unlinks", names)
	must(t, os.Rename(m("e/x"), m("d/y")))
	names = []string{"a", "d/c", "d/y"}
	check("after a rename", names)
	if _, err := os.Stat(m("e/x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("renamed name still there: %v", err)
	}
	v.Remount(t)
	check("after remount", names)
	must(t, os.Link(m("d/y"), m("e/z")))
	names = append(names, "e/z")
	check("a link after remount", names)

	// Back to two names: the header binds them, the links file goes.
	must(t, os.Remove(m("e/z")))
	must(t, os.Remove(m("d/y")))
	names = []string{"a", "d/c"}
	check("two names", names)
	if got := linksFiles(); len(got) != 0 {
		t.Fatalf("links files with two names: %v, want none", got)
	}
	v.Remount(t)
	check("two names, remount", names)
	if s := v.Log.String(); s != "" {
		t.Errorf("daemon log:\n%s", s)
	}
}

// TestBoundLinksTamper: a links file deleted, or replaced by another
// file's, makes the file EIO at every name through the mount.
func TestBoundLinksTamper(t *testing.T) {
	for _, attack := range []string{"delete", "swap"} {
		t.Run(attack, func(t *testing.T) {
			v := mounttest.NewBoundVault(t, nil)
			m := func(p string) string { return filepath.Join(v.Mnt, p) }
			links := func(f string) {
				must(t, os.WriteFile(m(f), []byte("contents of "+f), 0o644))
				for i := range 3 {
					must(t, os.Link(m(f), m(f+string(rune('1'+i)))))
				}
			}
			links("a")
			got, err := filepath.Glob(filepath.Join(v.Cipher, bind.LinksPrefix+"*"))
			must(t, err)
			if len(got) != 1 {
				t.Fatalf("links files: %v, want a's only", got)
			}
			aLinks := got[0]
			links("b")
			must(t, v.Srv.Unmount())
			switch attack {
			case "delete":
				must(t, os.Remove(aLinks))
			case "swap":
				all, err := filepath.Glob(filepath.Join(v.Cipher, bind.LinksPrefix+"*"))
				must(t, err)
				for _, p := range all {
					if p != aLinks {
						must(t, os.Rename(p, aLinks))
					}
				}
			}
			v.MountAgain(t, nil)
			for _, n := range []string{"a", "a1", "a2", "a3"} {
				if _, err := os.ReadFile(m(n)); !errors.Is(err, syscall.EIO) {
					t.Errorf("read %s: %v, want EIO", n, err)
				}
			}
			if got, err := os.ReadFile(m("b")); attack == "delete" && (err != nil || string(got) != "contents of b") {
				t.Errorf("read b (untouched): %q, %v", got, err)
			}
		})
	}
}

// TestBoundUnlinkOfLinkedName: the name a file was created under, then
// linked (so the kernel's node for it was made with a link count of 1),
// is unlinked with its binding dropped: put back behind the mount as a
// hard link of the other name, it does not read. Unlink skips the stat
// of the link count only for a node whose count is 1 (node.nlink), and
// Link must bring the target's count up for that to hold.
func TestBoundUnlinkOfLinkedName(t *testing.T) {
	v := mounttest.NewBoundVault(t, nil)
	m := func(p string) string { return filepath.Join(v.Mnt, p) }
	entries := func() map[string]bool {
		des, err := os.ReadDir(v.Cipher)
		must(t, err)
		got := map[string]bool{}
		for _, de := range des {
			got[de.Name()] = true
		}
		return got
	}
	added := func(before map[string]bool) string {
		t.Helper()
		var names []string
		for n := range entries() {
			if !before[n] {
				names = append(names, n)
			}
		}
		if len(names) != 1 {
			t.Fatalf("new backing entries: %v, want 1", names)
		}
		return names[0]
	}
	data := []byte("one file, two names, then one")
	before := entries()
	must(t, os.WriteFile(m("a"), data, 0o644))
	aName := added(before)
	before = entries()
	must(t, os.Link(m("a"), m("b")))
	bName := added(before)
	must(t, os.Remove(m("a")))
	if got, err := os.ReadFile(m("b")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read b after the unlink of a: %q, %v", got, err)
	}
	// The storage brings the name back.
	must(t, os.Link(filepath.Join(v.Cipher, bName), filepath.Join(v.Cipher, aName)))
	v.Remount(t)
	if got, err := os.ReadFile(m("a")); err == nil {
		t.Fatalf("a brought back behind the mount reads %q: its binding outlived the unlink", got)
	}
	if got, err := os.ReadFile(m("b")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read b after the remount: %q, %v", got, err)
	}
}
