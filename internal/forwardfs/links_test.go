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
