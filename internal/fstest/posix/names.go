package posix

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// testNames: unusual and maximal names survive create, readdir, stat,
// rename and unlink exactly.
func testNames(t *testing.T, e *env) {
	names := []string{
		"a", ".hidden", "..x", "...", "with space", " leading", "trailing ",
		"tab\there", "new\nline", "-dash", "~tilde", "per%cent", "back\\slash",
		"ünïcödé", "日本語のファイル名", "emoji-\U0001F600", "\x01\x7f\xff",
		"encryptfs.conf", "encryptfs.dirid", "encryptfs.long.x", "gocryptfs.diriv",
		strings.Repeat("a", 175), strings.Repeat("b", 176), strings.Repeat("c", 254),
		name('M', 255), strings.Repeat("é", 127) + "x", // 255 bytes of UTF-8
	}
	d := e.p("d")
	mkdir(t, d, 0o755)
	for i, n := range names {
		p := filepath.Join(d, n)
		if i%3 == 2 {
			mkdir(t, p, 0o700)
		} else {
			mkfile(t, p, 0o644, []byte(n))
		}
	}
	got := readNames(t, d)
	want := slices.Clone(names)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("readdir: got %q\nwant %q", got, want)
	}
	for i, n := range names {
		p := filepath.Join(d, n)
		if i%3 != 2 {
			if got := readFile(t, p); string(got) != n {
				t.Errorf("name %q: contents %q", n, got)
			}
		}
		if len(n) == 255 {
			wantErrno(t, unix.Rename(p, p+"~"), "rename to 256-byte name", unix.ENAMETOOLONG)
			continue
		}
		ok(t, unix.Rename(p, p+"~"), "rename "+strconv.Itoa(len(n))+"-byte name with suffix")
	}
	for i, n := range names {
		p := filepath.Join(d, n+"~")
		if len(n) == 255 {
			p = filepath.Join(d, n)
		}
		if i%3 == 2 {
			ok(t, unix.Rmdir(p), "rmdir")
		} else {
			ok(t, unix.Unlink(p), "unlink")
		}
	}
	if got := readNames(t, d); len(got) != 0 {
		t.Errorf("after removal: readdir %q", got)
	}
}

// readNames lists a directory, sorted.
func readNames(t *testing.T, d string) []string {
	t.Helper()
	entries, err := os.ReadDir(d)
	ok(t, err, "readdir "+d)
	var out []string
	for _, en := range entries {
		out = append(out, en.Name())
	}
	slices.Sort(out)
	return out
}

// testPathMax: a path of PATH_MAX-1 bytes resolves; PATH_MAX bytes do not.
// The nested directories are made with *at calls relative to a dirfd.
func testPathMax(t *testing.T, e *env) {
	const pathMax = 4096
	base := e.p("deep")
	mkdir(t, base, 0o755)
	// Components of 200 bytes plus a final file name that pads the absolute
	// path to exactly pathMax-1 bytes.
	parts := []string{}
	total := len(base)
	for total+1+200+1+50 < pathMax-1 {
		parts = append(parts, name(byte('a'+len(parts)%26), 200))
		total += 1 + 200
	}
	last := pathMax - 1 - total - 1
	if last > 255 || last < 1 {
		t.Fatalf("cannot pad path: last component would be %d bytes", last)
	}
	dirfd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	ok(t, err, "open base")
	for _, p := range parts {
		ok(t, unix.Mkdirat(dirfd, p, 0o755), "mkdirat")
		next, err := unix.Openat(dirfd, p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		ok(t, err, "openat")
		unix.Close(dirfd)
		dirfd = next
	}
	fd, err := unix.Openat(dirfd, name('z', last), unix.O_CREAT|unix.O_WRONLY, 0o644)
	ok(t, err, "create leaf")
	_, err = unix.Write(fd, []byte("deep"))
	ok(t, err, "write leaf")
	unix.Close(fd)
	unix.Close(dirfd)

	full := base + "/" + strings.Join(parts, "/") + "/" + name('z', last)
	if len(full) != pathMax-1 {
		t.Fatalf("constructed path has %d bytes, want %d", len(full), pathMax-1)
	}
	if got := readFile(t, full); string(got) != "deep" {
		t.Errorf("read %d-byte path: %q", len(full), got)
	}
	_, err = unix.Open(full+"x", unix.O_CREAT|unix.O_WRONLY, 0o644)
	wantErrno(t, err, "open 4096-byte path", unix.ENAMETOOLONG)
	// Removal from the top needs the long path resolved component-wise,
	// which the suite's cleanup (os.RemoveAll, *at based) does.
}
