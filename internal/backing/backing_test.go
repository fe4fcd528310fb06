package backing

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// setup makes root/{d/e, f, link -> d, abs -> /etc} and returns root's fd.
func setup(t *testing.T) (string, int) {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "d", "e"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	must(t, os.Symlink("d", filepath.Join(dir, "link")))
	must(t, os.Symlink("/etc", filepath.Join(dir, "abs")))
	fd, err := OpenRoot(dir)
	must(t, err)
	t.Cleanup(func() { Close(fd) })
	return dir, fd
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenDir(t *testing.T) {
	_, root := setup(t)
	for _, tc := range []struct {
		rel  string
		want error // nil: success
	}{
		{"", nil},
		{".", nil},
		{"d", nil},
		{"d/e", nil},
		{"link", unix.ENOTDIR}, // O_NOFOLLOW|O_DIRECTORY on a symlink
		{"link/e", unix.ELOOP},
		{"abs", unix.ENOTDIR},
		{"..", unix.EXDEV},
		{"d/../..", unix.EXDEV},
		{"/etc", unix.EXDEV},
		{"f", unix.ENOTDIR},
		{"missing", unix.ENOENT},
	} {
		t.Run(tc.rel, func(t *testing.T) {
			fd, err := OpenDir(root, tc.rel)
			if err == nil {
				Close(fd)
			}
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("OpenDir(%q) = %v, want %v", tc.rel, err, tc.want)
			}
		})
	}
}

// TestOpenPath: a path of checked components, opened in one call or,
// past PATH_MAX, one component at a time, with the same refusals: a
// symlink anywhere in it, "..", a component with a slash, a file.
func TestOpenPath(t *testing.T) {
	dir, root := setup(t)
	for _, tc := range []struct {
		names []string
		want  error // nil: success
	}{
		{nil, nil},
		{[]string{"d", "e"}, nil},
		{[]string{"link", "e"}, unix.ELOOP},
		{[]string{"d", "..", "d"}, ErrBadComponent},
		{[]string{"d/e"}, ErrBadComponent},
		{[]string{"f"}, unix.ENOTDIR},
	} {
		fd, err := OpenPath(root, tc.names)
		if err == nil {
			Close(fd)
		}
		if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Errorf("OpenPath(%q) = %v, want %v", tc.names, err, tc.want)
		}
	}
	// 20 levels of 250-byte names: past PATH_MAX, opened level by level;
	// a symlink at the last level is refused there too.
	var long []string
	at, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	for i := range 20 {
		name := string(rune('a'+i)) + strings.Repeat("x", 249)
		must(t, unix.Mkdirat(at, name, 0o755))
		sub, err := unix.Openat(at, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		must(t, err)
		unix.Close(at)
		at = sub
		long = append(long, name)
	}
	defer unix.Close(at)
	mf, err := unix.Openat(at, "marker", unix.O_CREAT|unix.O_WRONLY, 0o644)
	must(t, err)
	unix.Close(mf)
	must(t, unix.Symlinkat(".", at, "loop"))
	fd, err := OpenPath(root, long)
	must(t, err)
	if _, err := ReadFileAt(fd, "marker", 10); err != nil {
		t.Errorf("OpenPath of a %d-level path opened another directory: %v", len(long), err)
	}
	Close(fd)
	if fd, err := OpenPath(root, append(long, "loop")); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("OpenPath through a symlink past PATH_MAX = %v, want ENOTDIR", err)
		if err == nil {
			Close(fd)
		}
	}
}

func TestSingleComponent(t *testing.T) {
	_, root := setup(t)
	for _, name := range []string{"", ".", "..", "d/e", "a\x00b"} {
		if _, err := Openat(root, name, unix.O_RDONLY); !errors.Is(err, ErrBadComponent) {
			t.Errorf("Openat(%q) = %v, want ErrBadComponent", name, err)
		}
		if err := mkdirat(root, name, 0o700); !errors.Is(err, ErrBadComponent) {
			t.Errorf("mkdirat(%q) = %v, want ErrBadComponent", name, err)
		}
	}
	if _, err := Openat(root, "link", unix.O_RDONLY); !errors.Is(err, unix.ELOOP) {
		t.Errorf("Openat(symlink) = %v, want ELOOP", err)
	}
	if _, err := ReadFileAt(root, "abs", 100); !errors.Is(err, unix.ELOOP) {
		t.Errorf("ReadFileAt(symlink) = %v, want ELOOP", err)
	}
}

func TestFilesAndDir(t *testing.T) {
	dir, root := setup(t)
	must(t, writeFileAt(root, "id", []byte("0123456789abcdef"), 0o400))
	if err := writeFileAt(root, "id", []byte("again"), 0o400); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("second WriteFileAt = %v, want EEXIST", err)
	}
	st, err := Fstatat(root, "id")
	must(t, err)
	if st.Mode&0o7777 != 0o400 || st.Size != 16 {
		t.Fatalf("mode %o size %d", st.Mode&0o7777, st.Size)
	}
	b, err := ReadFileAt(root, "id", 16)
	must(t, err)
	if string(b) != "0123456789abcdef" {
		t.Fatalf("read %q", b)
	}
	if _, err := ReadFileAt(root, "id", 15); !errors.Is(err, ErrTooBig) {
		t.Fatalf("limit: %v", err)
	}
	// Many entries so that getdents needs more than one call.
	sub := filepath.Join(dir, "many")
	must(t, os.Mkdir(sub, 0o755))
	var want []string
	for i := range 600 {
		n := filepath.Join(sub, string(rune('a'+i%26))+string(make([]byte, 0))+itoa(i)+"-0123456789012345678901234567890123456789012345678901234567890123456789")
		must(t, os.WriteFile(n, nil, 0o600))
		want = append(want, filepath.Base(n))
	}
	fd, err := OpenDir(root, "many")
	must(t, err)
	defer Close(fd)
	for range 2 { // listing twice from the same fd works
		ents, err := ReadDir(fd)
		must(t, err)
		var got []string
		for _, e := range ents {
			if e.Type != unix.DT_REG || e.Ino == 0 {
				t.Fatalf("entry %+v", e)
			}
			got = append(got, e.Name)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("ReadDir: %d entries, want %d", len(got), len(want))
		}
	}
	// *at wrappers on a symlink act on the link itself.
	must(t, Fchownat(root, "link", 0, 0))
	ts := [2]unix.Timespec{{Sec: 1, Nsec: 2}, {Sec: 3, Nsec: 4}}
	must(t, UtimesNanoAt(root, "link", ts))
	lst, err := Fstatat(root, "link")
	must(t, err)
	if lst.Mode&unix.S_IFMT != unix.S_IFLNK || lst.Mtim.Nsec != 4 {
		t.Fatalf("symlink stat %+v", lst)
	}
	target, err := Readlinkat(root, "link")
	must(t, err)
	if target != "d" {
		t.Fatalf("readlink %q", target)
	}
	must(t, Fchmodat(root, "f", 0o151))
	st, err = Fstatat(root, "f")
	must(t, err)
	if st.Mode&0o7777 != 0o151 {
		t.Fatalf("chmod: %o", st.Mode&0o7777)
	}
	must(t, fsyncDirAt(root, ""))
	must(t, fsyncDirAt(root, "d"))
	must(t, renameat2(root, "f", root, "g", unix.RENAME_NOREPLACE))
	if err := renameat2(root, "g", root, "id", unix.RENAME_NOREPLACE); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("NOREPLACE: %v", err)
	}
	must(t, unlinkat(root, "g", 0))
	if err := unlinkat(root, "e", unix.AT_REMOVEDIR); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("unlink missing: %v", err)
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// TestReadFileAtSizesByFile: a generous limit does not size the buffer
// (freshness files may be up to 64 MiB, and are read per manifest); the
// file's own size does, and a file over the limit is still refused.
func TestReadFileAtSizesByFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "small"), []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, err := ReadFileAt(fd, "small", 64<<20)
	runtime.ReadMemStats(&after)
	if err != nil || string(b) != "0123456789" {
		t.Fatalf("small: %q, %v", b, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("reading 10 bytes with a 64 MiB limit allocated %d bytes", got)
	}
	if b, err := ReadFileAt(fd, "big", 5000); err != nil || len(b) != 5000 {
		t.Errorf("big at its limit: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFileAt(fd, "big", 4999); !errors.Is(err, ErrTooBig) {
		t.Errorf("big over its limit: %v", err)
	}
}

// TestOpenatChangesNothing: the package's Openat refuses to create or
// truncate (only (*FS).Openat does, which reports the change), and
// (*FS).Openat with a nil FS creates.
func TestOpenatChangesNothing(t *testing.T) {
	_, root := setup(t)
	for _, flags := range []int{unix.O_RDWR | unix.O_CREAT, unix.O_WRONLY | unix.O_TRUNC} {
		if _, err := Openat(root, "new", flags); !errors.Is(err, errWouldChange) {
			t.Errorf("Openat(%#x) = %v, want errWouldChange", flags, err)
		}
	}
	if _, err := Fstatat(root, "new"); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Openat created the file: %v", err)
	}
	var fsys *FS
	fd, err := fsys.Openat(root, "new", unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	Close(fd)
}
