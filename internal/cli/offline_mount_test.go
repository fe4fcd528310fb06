package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"golang.org/x/sys/unix"
)

// TestOfflineMatchesMount: what ls, cat and export show without FUSE is
// byte for byte what the mount shows: names, contents at chunk boundaries,
// symlink targets (short and sidecar-stored), modes, mtimes to the
// nanosecond and user xattrs.
func TestOfflineMatchesMount(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	pf := writePassfile(t, "pw")
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)

	// Build a tree through the mount.
	m := func(rel string) string { return filepath.Join(mnt, rel) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(m("a/b/c"), 0o755))
	must(os.Mkdir(m(strings.Repeat("L", 200)), 0o751))
	for i, size := range []int{0, 1, 16383, 16384, 16385, 100000, 1 << 20} {
		data := bytes.Repeat([]byte{byte('a' + i)}, size)
		for j := range data {
			data[j] ^= byte(j * 7)
		}
		name := m(filepath.Join("a/b", "f"+strings.Repeat("x", i)))
		must(os.WriteFile(name, data, 0o640))
	}
	must(os.WriteFile(m(filepath.Join(strings.Repeat("L", 200), strings.Repeat("n", 255))), []byte("long"), 0o600))
	must(os.Symlink("../a/b/f", m("a/short-link")))
	must(os.Symlink(strings.Repeat("t/", 2000)+"end", m("a/long-link")))
	must(unix.Setxattr(m("a/b/f"), "user.note", []byte("xattr value"), 0))
	must(unix.Setxattr(m("a/b"), "user.dir", []byte{0, 1, 2}, 0))
	must(os.Chmod(m("a/b/c"), 0o700))
	when := time.Date(2021, 3, 4, 5, 6, 7, 123456789, time.UTC)
	must(os.Chtimes(m("a/b/fx"), when, when))

	// The mount's view.
	mountTree := snapshot(t, mnt)

	// ls -R lists exactly the mount's paths.
	ls := run(t, "", "ls", "-R", "--passfile", pf, dir)
	ls.want(t, 0)
	listed := strings.Split(strings.TrimSpace(ls.stdout), "\n")
	sort.Strings(listed)
	var paths []string
	for p := range mountTree {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	if strings.Join(listed, "\n") != strings.Join(paths, "\n") {
		t.Errorf("ls -R:\n%s\nmount:\n%s", strings.Join(listed, "\n"), strings.Join(paths, "\n"))
	}

	// cat gives each file's bytes.
	for p, e := range mountTree {
		if e.mode.IsRegular() {
			c := run(t, "", "cat", "--passfile", pf, dir, p)
			c.want(t, 0)
			if c.stdout != e.content {
				t.Errorf("cat %s: %d bytes differ from the mount's %d", p, len(c.stdout), len(e.content))
			}
		}
	}

	// export reproduces the whole tree.
	dest := filepath.Join(t.TempDir(), "out")
	run(t, "", "export", "--passfile", pf, dir, dest).want(t, 0)
	exported := snapshot(t, dest)
	for p, want := range mountTree {
		got, ok := exported[p]
		if !ok {
			t.Errorf("export lacks %s", p)
			continue
		}
		if got != want {
			t.Errorf("export %s:\n got  %+v\n want %+v", p, got.short(), want.short())
		}
	}
	for p := range exported {
		if _, ok := mountTree[p]; !ok {
			t.Errorf("export has extra %s", p)
		}
	}
	run(t, "", "unmount", mnt).want(t, 0)
}

// treeEntry is what a user can observe of one entry.
type treeEntry struct {
	mode    fs.FileMode
	mtime   int64 // ns; directories excluded (their mtime moves as entries are added)
	content string
	target  string
	xattrs  string
}

func (e treeEntry) short() treeEntry {
	if len(e.content) > 16 {
		e.content = e.content[:16] + "..."
	}
	if len(e.target) > 16 {
		e.target = e.target[:16] + "..."
	}
	return e
}

// snapshot maps every path below root to what can be observed of it.
func snapshot(t *testing.T, root string) map[string]treeEntry {
	t.Helper()
	out := map[string]treeEntry{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		e := treeEntry{mode: fi.Mode()}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			e.content, e.mtime = string(b), fi.ModTime().UnixNano()
		case fi.Mode()&fs.ModeSymlink != 0:
			e.target, err = os.Readlink(path)
			if err != nil {
				return err
			}
		}
		if !fi.Mode().IsRegular() && !fi.IsDir() {
			out[rel] = e // user xattrs exist only on files and directories
			return nil
		}
		buf := make([]byte, 4096)
		n, err := unix.Llistxattr(path, buf)
		if err != nil {
			return err
		}
		names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
		sort.Strings(names)
		for _, name := range names {
			if !strings.HasPrefix(name, "user.") {
				continue
			}
			v := make([]byte, 4096)
			vn, err := unix.Lgetxattr(path, name, v)
			if err != nil {
				return err
			}
			e.xattrs += name + "=" + string(v[:vn]) + ";"
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
