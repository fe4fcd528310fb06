package tree

import (
	"bytes"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// newTestTree returns a tree over a fresh vault root and the root's fd and ID.
func newTestTree(t *testing.T) (*Tree, string, int, []byte) {
	t.Helper()
	k, err := keys.Derive(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(k, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fd, err := backing.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backing.Close(fd) })
	id, err := tr.DirIDs().InitRoot(fd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.DirIDs().InitRoot(fd); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("second InitRoot: %v", err)
	}
	got, err := tr.DirIDs().Read(fd, bind.Place{})
	if err != nil || !bytes.Equal(got, id) {
		t.Fatalf("ReadDirID = %x, %v; want %x", got, err, id)
	}
	return tr, dir, fd, id
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustName(t *testing.T, tr *Tree, id []byte, plain string) Name {
	t.Helper()
	n, err := tr.Name(id, plain)
	must(t, err)
	return n
}

// listPlain lists dirfd and fails on undecryptable entries.
func listPlain(t *testing.T, tr *Tree, fd int, id []byte) map[string]Entry {
	t.Helper()
	ents, bad, err := tr.List(NewDir(fd, id, nil))
	must(t, err)
	if len(bad) > 0 {
		t.Fatalf("bad entries: %+v", bad)
	}
	m := map[string]Entry{}
	for _, e := range ents {
		m[e.Name.Plain] = e
	}
	return m
}

func TestNamesAndList(t *testing.T) {
	tr, dir, root, id := newTestTree(t)
	for _, tc := range []struct {
		name string
		long bool
		err  error
	}{
		{"a", false, nil},
		{"hello world.txt", false, nil},
		{strings.Repeat("x", 159), false, nil},
		{strings.Repeat("y", 160), true, nil},
		{strings.Repeat("z", 255), true, nil},
		{strings.Repeat("z", 256), false, names.ErrNameTooLong},
		{"a/b", false, names.ErrInvalidName},
		{"..", false, names.ErrInvalidName},
	} {
		t.Run(tc.name[:min(len(tc.name), 12)], func(t *testing.T) {
			n, err := tr.Name(id, tc.name)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Name(%q) = %v, want %v", tc.name, err, tc.err)
				}
				return
			}
			must(t, err)
			if n.Long != tc.long || len(n.Backing) > 255 || (len(tc.name) > 4 && strings.Contains(n.Backing, tc.name)) {
				t.Fatalf("Name(%q) = %+v", tc.name, n)
			}
			fd, err := tr.Create(NewDir(root, nil, nil), n, unix.O_WRONLY|unix.O_APPEND, 0o640)
			must(t, err)
			fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
			if fl&unix.O_ACCMODE != unix.O_RDWR || fl&unix.O_APPEND != 0 {
				t.Errorf("backing flags %#o", fl)
			}
			backing.Close(fd)
			if _, err := tr.Create(NewDir(root, nil, nil), n, 0, 0o640); !errors.Is(err, unix.EEXIST) {
				t.Fatalf("second Create: %v", err)
			}
			m := listPlain(t, tr, root, id)
			if _, ok := m[tc.name]; !ok {
				t.Fatalf("%q not listed", tc.name)
			}
		})
	}
	// Two long names plus two short names plus the root's dirid: the sidecars
	// and dirid are hidden.
	if m := listPlain(t, tr, root, id); len(m) != 5 {
		t.Fatalf("listed %d", len(m))
	}
	// A foreign file and a tampered name are reported, not dropped.
	must(t, os.WriteFile(filepath.Join(dir, "foreign file"), nil, 0o600))
	n := mustName(t, tr, id, "a")
	tampered := "A" + n.Backing[1:]
	if tampered == n.Backing {
		tampered = "B" + n.Backing[1:]
	}
	must(t, os.WriteFile(filepath.Join(dir, tampered), nil, 0o600))
	_, bad, err := tr.List(NewDir(root, id, nil))
	must(t, err)
	if len(bad) != 2 {
		t.Fatalf("bad = %+v, want 2", bad)
	}
	// Unlink removes long-name sidecars too.
	for _, plain := range []string{strings.Repeat("y", 160), strings.Repeat("z", 255), "a"} {
		must(t, tr.Unlink(NewDir(root, nil, nil), mustName(t, tr, id, plain), 0))
	}
	left, err := os.ReadDir(dir)
	must(t, err)
	if len(left) != 5 { // dirid, 2 short names, foreign, tampered
		t.Fatalf("left: %v", left)
	}
}

func TestMkdirRmdir(t *testing.T) {
	tr, dir, root, id := newTestTree(t)
	for _, plain := range []string{"d", strings.Repeat("L", 200)} {
		n := mustName(t, tr, id, plain)
		sub, err := tr.Mkdir(NewDir(root, nil, nil), n, 0o151)
		must(t, err)
		st, err := backing.Fstatat(root, n.Backing)
		must(t, err)
		if st.Mode&0o7777 != 0o151 {
			t.Fatalf("mode %o", st.Mode&0o7777)
		}
		if _, err := tr.Mkdir(NewDir(root, nil, nil), n, 0o755); !errors.Is(err, unix.EEXIST) {
			t.Fatalf("Mkdir twice: %v", err)
		}
		subfd, err := backing.OpenSubdir(root, n.Backing)
		must(t, err)
		got, err := tr.DirIDs().Read(subfd, bind.Place{})
		if err != nil || !bytes.Equal(got, sub) || bytes.Equal(sub, id) {
			t.Fatalf("sub ID %x %v", got, err)
		}
		// Not empty: a file inside.
		fn := mustName(t, tr, sub, "f")
		fd, err := tr.Create(NewDir(subfd, nil, nil), fn, 0, 0o600)
		must(t, err)
		backing.Close(fd)
		if err := tr.Rmdir(NewDir(root, nil, nil), n); !errors.Is(err, ErrNotEmpty) {
			t.Fatalf("Rmdir non-empty: %v", err)
		}
		// The failed rmdir left the ID in place.
		if got, err := tr.DirIDs().Read(subfd, bind.Place{}); err != nil || !bytes.Equal(got, sub) {
			t.Fatalf("ID after failed rmdir: %v", err)
		}
		must(t, tr.Unlink(NewDir(subfd, nil, nil), fn, 0))
		backing.Close(subfd)
		must(t, tr.Rmdir(NewDir(root, nil, nil), n))
	}
	left, err := os.ReadDir(dir)
	must(t, err)
	if len(left) != 1 || left[0].Name() != names.DirIDFile {
		t.Fatalf("left: %v", left)
	}
	// A directory without ID is corrupt.
	must(t, os.Mkdir(filepath.Join(dir, "noid"), 0o700))
	fd, err := backing.OpenSubdir(root, "noid")
	must(t, err)
	defer backing.Close(fd)
	if _, err := tr.DirIDs().Read(fd, bind.Place{}); !errors.Is(err, ErrCorruptDir) {
		t.Fatalf("ReadDirID without file: %v", err)
	}
}

func TestSymlinks(t *testing.T) {
	tr, _, root, id := newTestTree(t)
	n := mustName(t, tr, id, "d")
	sub, err := tr.Mkdir(NewDir(root, nil, nil), n, 0o755)
	must(t, err)
	subfd, err := backing.OpenSubdir(root, n.Backing)
	must(t, err)
	defer backing.Close(subfd)
	for _, target := range []string{"x", "../a/b", strings.Repeat("t", 3031), strings.Repeat("u", 3032), strings.Repeat("v", 4095)} {
		t.Run(target[:1], func(t *testing.T) {
			ln := mustName(t, tr, id, "link"+target[:1])
			must(t, tr.Symlink(NewDir(root, id, nil), ln, target))
			// The kernel's EEXIST for a short target, ErrExists for a
			// long one (checked before the sidecar is written).
			if err := tr.Symlink(NewDir(root, id, nil), ln, target); !errors.Is(err, iofs.ErrExist) {
				t.Fatalf("Symlink twice: %v", err)
			}
			got, err := tr.Symlinks().Readlink(NewDir(root, id, nil), ln)
			if err != nil || got != target {
				t.Fatalf("Readlink = %d bytes, %v", len(got), err)
			}
			// Bound to its name: another name's entry does not authenticate.
			other := mustName(t, tr, id, "other")
			must(t, (*backing.FS)(nil).Linkat(root, ln.Backing, root, other.Backing))
			if len(target) > 3031 {
				bt, _ := backing.Readlinkat(root, ln.Backing)
				if bt != meta.LongSymlinkMarker {
					t.Fatalf("long target not in sidecar")
				}
				blob, err := backing.ReadFileAt(root, meta.SymlinkSidecarName(ln.Backing), 8192)
				must(t, err)
				must(t, (*backing.FS)(nil).WriteFileAt(root, meta.SymlinkSidecarName(other.Backing), blob, 0o400))
			}
			if _, err := tr.Symlinks().Readlink(NewDir(root, id, nil), other); !errors.Is(err, meta.ErrCorrupt) {
				t.Fatalf("Readlink of moved blob: %v", err)
			}
			must(t, tr.Unlink(NewDir(root, nil, nil), other, 0))
			// Rename into the subdirectory re-encrypts.
			dst := mustName(t, tr, sub, "moved")
			must(t, tr.Rename(NewDir(root, id, nil), ln, NewDir(subfd, sub, nil), dst, 0))
			got, err = tr.Symlinks().Readlink(NewDir(subfd, sub, nil), dst)
			if err != nil || got != target {
				t.Fatalf("Readlink after rename = %d bytes, %v", len(got), err)
			}
			if _, err := backing.Fstatat(root, ln.Backing); !errors.Is(err, unix.ENOENT) {
				t.Fatalf("old symlink still there: %v", err)
			}
			must(t, tr.Unlink(NewDir(subfd, nil, nil), dst, 0))
			if ents, _ := backing.ReadDir(subfd); len(ents) != 1 {
				t.Fatalf("leftovers in subdir: %+v", ents)
			}
		})
	}
	if ents, _ := backing.ReadDir(root); len(ents) != 2 {
		t.Fatalf("leftovers in root: %+v", ents)
	}
}

func TestRename(t *testing.T) {
	tr, _, root, id := newTestTree(t)
	mk := func(plain string) Name {
		n := mustName(t, tr, id, plain)
		fd, err := tr.Create(NewDir(root, nil, nil), n, 0, 0o600)
		must(t, err)
		unix.Write(fd, []byte(plain))
		backing.Close(fd)
		return n
	}
	long := strings.Repeat("l", 220)
	a, b := mk("a"), mk(long)
	d1 := mustName(t, tr, id, "d1")
	d2 := mustName(t, tr, id, "d2")
	_, err := tr.Mkdir(NewDir(root, nil, nil), d1, 0o700)
	must(t, err)
	d2id, err := tr.Mkdir(NewDir(root, nil, nil), d2, 0o700)
	must(t, err)
	lnk := mustName(t, tr, id, "lnk")
	must(t, tr.Symlink(NewDir(root, id, nil), lnk, strings.Repeat("T", 4000)))

	if err := tr.Rename(NewDir(root, id, nil), a, NewDir(root, id, nil), b, unix.RENAME_NOREPLACE); !errors.Is(err, ErrExists) {
		t.Fatalf("NOREPLACE: %v", err)
	}
	if err := tr.Rename(NewDir(root, id, nil), a, NewDir(root, id, nil), d1, 0); !errors.Is(err, ErrIsDir) {
		t.Fatalf("file over dir: %v", err)
	}
	if err := tr.Rename(NewDir(root, id, nil), d1, NewDir(root, id, nil), a, 0); !errors.Is(err, ErrNotDir) {
		t.Fatalf("dir over file: %v", err)
	}
	// Exchange a long-named file with a long-target symlink.
	must(t, tr.Rename(NewDir(root, id, nil), b, NewDir(root, id, nil), lnk, unix.RENAME_EXCHANGE))
	if got, err := tr.Symlinks().Readlink(NewDir(root, id, nil), b); err != nil || got != strings.Repeat("T", 4000) {
		t.Fatalf("exchanged symlink: %v", err)
	}
	// Dir over empty dir; then non-empty target refuses.
	must(t, tr.Rename(NewDir(root, id, nil), d1, NewDir(root, id, nil), d2, 0))
	sub, err := backing.OpenSubdir(root, d2.Backing)
	must(t, err)
	got, err := tr.DirIDs().Read(sub, bind.Place{})
	must(t, err)
	if bytes.Equal(got, d2id) {
		t.Fatal("d2 should now be the old d1")
	}
	inner := mustName(t, tr, got, "inner")
	fd, err := tr.Create(NewDir(sub, nil, nil), inner, 0, 0o600)
	must(t, err)
	backing.Close(fd)
	backing.Close(sub)
	_, err = tr.Mkdir(NewDir(root, nil, nil), d1, 0o700)
	must(t, err)
	if err := tr.Rename(NewDir(root, id, nil), d1, NewDir(root, id, nil), d2, 0); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("over non-empty dir: %v", err)
	}
	// File over file with long name: the old long sidecar goes away.
	must(t, tr.Rename(NewDir(root, id, nil), lnk, NewDir(root, id, nil), a, 0))
	m := listPlain(t, tr, root, id)
	if len(m) != 4 { // a, long (symlink), d1, d2
		t.Fatalf("listing %v", m)
	}
	if got, err := tr.Symlinks().Readlink(NewDir(root, id, nil), b); err != nil || len(got) != 4000 {
		t.Fatalf("symlink after renames: %v", err)
	}
	// Hard links: a symlink cannot be linked.
	if err := tr.Link(NewDir(root, nil, nil), b, NewDir(root, nil, nil), mustName(t, tr, id, "hl")); !errors.Is(err, ErrNotPermitted) {
		t.Fatalf("link symlink: %v", err)
	}
	must(t, tr.Link(NewDir(root, nil, nil), a, NewDir(root, nil, nil), mustName(t, tr, id, strings.Repeat("h", 230))))
	if m := listPlain(t, tr, root, id); len(m) != 5 {
		t.Fatalf("after link: %v", m)
	}
}

func TestXattrs(t *testing.T) {
	tr, _, root, id := newTestTree(t)
	n := mustName(t, tr, id, "f")
	fd, err := tr.Create(NewDir(root, nil, nil), n, 0, 0o600)
	must(t, err)
	defer backing.Close(fd)
	fileID := bytes.Repeat([]byte{1}, 16)
	must(t, tr.Xattrs().Set(fd, fileID, "user.k", []byte("v"), unix.XATTR_CREATE))
	if err := tr.Xattrs().Set(fd, fileID, "user.k", []byte("v"), unix.XATTR_CREATE); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("XATTR_CREATE twice: %v", err)
	}
	if err := tr.Xattrs().Set(fd, fileID, "security.x", []byte("v"), 0); !errors.Is(err, meta.ErrNotUser) {
		t.Fatalf("non-user: %v", err)
	}
	must(t, tr.Xattrs().Set(root, id, "user.dir", []byte("dv"), 0))
	v, err := tr.Xattrs().Get(fd, fileID, "user.k")
	if err != nil || string(v) != "v" {
		t.Fatalf("get: %q %v", v, err)
	}
	if _, err := tr.Xattrs().Get(fd, bytes.Repeat([]byte{2}, 16), "user.k"); !IsXattrMissing(err) {
		t.Fatalf("other object ID sees the attribute: %v", err)
	}
	list, bad, err := tr.Xattrs().List(fd, fileID)
	if err != nil || len(bad) != 0 || len(list) != 1 || list[0] != "user.k" {
		t.Fatalf("list %v %v %v", list, bad, err)
	}
	all, _ := backing.Flistxattr(fd)
	for _, a := range all {
		if strings.Contains(a, "k") && !strings.HasPrefix(a, meta.XattrPrefix) {
			t.Fatalf("plaintext xattr name %q", a)
		}
	}
	must(t, tr.Xattrs().Remove(fd, fileID, "user.k"))
	if _, err := tr.Xattrs().Get(fd, fileID, "user.k"); !IsXattrMissing(err) {
		t.Fatalf("after remove: %v", err)
	}
	if v, err := tr.Xattrs().Get(root, id, "user.dir"); err != nil || string(v) != "dv" {
		t.Fatalf("dir xattr %q %v", v, err)
	}
}

func mustReadlink(t *testing.T, p string) string {
	t.Helper()
	s, err := os.Readlink(p)
	must(t, err)
	return s
}
