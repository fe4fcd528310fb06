package forwardfs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// TestCiphertext writes known plaintext (names, contents, symlink targets,
// xattrs) and checks that none of it appears in CIPHERDIR.
func TestCiphertext(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	const marker = "PLAINTEXTMARKER"
	content := bytes.Repeat([]byte(marker), 10000)
	must(t, os.MkdirAll(filepath.Join(v.Mnt, marker+"dir", marker+"sub"), 0o755))
	for _, name := range []string{marker + "file", strings.Repeat(marker, 17)} { // short and long name
		p := filepath.Join(v.Mnt, marker+"dir", name)
		must(t, os.WriteFile(p, content, 0o644))
		must(t, unix.Setxattr(p, "user."+marker, []byte(marker), 0))
	}
	must(t, os.Symlink(marker+"target", filepath.Join(v.Mnt, marker+"link")))
	must(t, os.Symlink(strings.Repeat(marker, 250), filepath.Join(v.Mnt, marker+"longlink")))
	must(t, unix.Setxattr(filepath.Join(v.Mnt, marker+"dir"), "user."+marker, []byte(marker), 0))

	var files int
	err := filepath.WalkDir(v.Cipher, func(p string, d fs.DirEntry, err error) error {
		must(t, err)
		if strings.Contains(d.Name(), marker) {
			t.Errorf("plaintext name in CIPHERDIR: %s", p)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			if strings.Contains(target, marker) {
				t.Errorf("plaintext symlink target in %s", p)
			}
		} else if d.Type().IsRegular() {
			files++
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte(marker)) {
				t.Errorf("plaintext content in %s", p)
			}
		}
		buf := make([]byte, 4096)
		n, _ := unix.Llistxattr(p, buf)
		if bytes.Contains(buf[:n], []byte(marker)) {
			t.Errorf("plaintext xattr name on %s", p)
		}
		for _, a := range strings.Split(string(buf[:n]), "\x00") {
			if a == "" {
				continue
			}
			val := make([]byte, 4096)
			k, _ := unix.Lgetxattr(p, a, val)
			if bytes.Contains(val[:max(k, 0)], []byte(marker)) {
				t.Errorf("plaintext xattr value on %s", p)
			}
		}
		return nil
	})
	must(t, err)
	if files < 4 {
		t.Fatalf("walked only %d files", files)
	}
	// And everything reads back.
	b, err := os.ReadFile(filepath.Join(v.Mnt, marker+"dir", strings.Repeat(marker, 17)))
	if err != nil || !bytes.Equal(b, content) {
		t.Fatalf("read back: %v", err)
	}
	if target, err := os.Readlink(filepath.Join(v.Mnt, marker+"longlink")); err != nil || target != strings.Repeat(marker, 250) {
		t.Fatalf("long symlink: %v", err)
	}
}

// TestTamper flips ciphertext bytes and expects EIO, logged once.
func TestTamper(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	f := filepath.Join(v.Mnt, "file")
	must(t, os.WriteFile(f, bytes.Repeat([]byte("a"), 10000), 0o644))
	must(t, os.Symlink("target", filepath.Join(v.Mnt, "link")))
	must(t, v.Srv.Unmount())
	// A byte in the middle of stored chunk 1, wherever the vault's format
	// puts it (v1, a v2 header, tag blocks with file roots).
	suite := v.Session(t).Engine().Suite()
	mid := suite.ChunkOffset(1) + int64(suite.CipherChunkSize())/2

	for _, p := range mounttest.BackingFiles(t, v.Cipher) {
		st, err := os.Lstat(p)
		must(t, err)
		switch {
		case st.Mode().IsRegular():
			b, err := os.ReadFile(p)
			must(t, err)
			b[mid] ^= 1
			must(t, os.WriteFile(p, b, 0o644))
		case st.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			must(t, err)
			tampered := []byte(target)
			tampered[10] ^= 'A' ^ 'B'
			if tampered[10] == target[10] {
				tampered[10] = 'C'
			}
			must(t, os.Remove(p))
			must(t, os.Symlink(string(tampered), p))
		}
	}
	v.MountAgain(t, nil)
	for range 2 {
		if _, err := os.ReadFile(f); !errors.Is(err, unix.EIO) {
			t.Fatalf("read of tampered file: %v, want EIO", err)
		}
	}
	// The first 4096-byte chunk is intact.
	fd, err := os.Open(f)
	must(t, err)
	head := make([]byte, 4096)
	if _, err := fd.ReadAt(head, 0); err != nil || head[0] != 'a' {
		t.Errorf("intact chunk: %v", err)
	}
	fd.Close()
	if _, err := os.Readlink(filepath.Join(v.Mnt, "link")); !errors.Is(err, unix.EIO) {
		t.Fatalf("readlink of tampered symlink: %v, want EIO", err)
	}
	log := v.Log.String()
	if c := strings.Count(log, `read "/file"`); c != 1 {
		t.Errorf("corruption of /file logged %d times, want 1:\n%s", c, log)
	}
}

// TestErrnos checks the error cases of the common operations.
func TestErrnos(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	p := func(s ...string) string { return filepath.Join(append([]string{v.Mnt}, s...)...) }
	must(t, os.Mkdir(p("d"), 0o755))
	must(t, os.WriteFile(p("d", "f"), nil, 0o644))
	long := strings.Repeat("n", 255)
	must(t, os.WriteFile(p(long), []byte("long"), 0o644))
	for _, tc := range []struct {
		what string
		err  error
		want unix.Errno
	}{
		{"stat missing", unix.Stat(p("missing"), &unix.Stat_t{}), unix.ENOENT},
		{"mkdir existing", unix.Mkdir(p("d"), 0o755), unix.EEXIST},
		{"create excl existing", func() error {
			_, err := unix.Open(p("d", "f"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
			return err
		}(), unix.EEXIST},
		{"rmdir non-empty", unix.Rmdir(p("d")), unix.ENOTEMPTY},
		{"256-byte name", unix.Mkdir(p(long+"x"), 0o755), unix.ENAMETOOLONG},
		{"256-byte name stat", unix.Stat(p(long+"x"), &unix.Stat_t{}), unix.ENAMETOOLONG},
		{"4096-byte symlink target", unix.Symlink(strings.Repeat("t", 4096), p("sl")), unix.ENAMETOOLONG},
		{"security xattr", unix.Setxattr(p(long), "security.foo", []byte("x"), 0), unix.EOPNOTSUPP},
		{"missing xattr", func() error { _, err := unix.Getxattr(p(long), "user.none", nil); return err }(), unix.ENODATA},
		{"176-byte xattr name", unix.Setxattr(p(long), "user."+strings.Repeat("x", 171), []byte("x"), 0), unix.ERANGE},
		{"xattr value over the limit", unix.Setxattr(p(long), "user.big", make([]byte, 65536-39), 0), unix.E2BIG},
		{"unlink dir", unix.Unlink(p("d")), unix.EISDIR},
		{"rmdir file", unix.Rmdir(p("d", "f")), unix.ENOTDIR},
		{"rename noreplace", unix.Renameat2(unix.AT_FDCWD, p(long), unix.AT_FDCWD, p("d", "f"), unix.RENAME_NOREPLACE), unix.EEXIST},
		{"rename exchange missing", unix.Renameat2(unix.AT_FDCWD, p(long), unix.AT_FDCWD, p("nope"), unix.RENAME_EXCHANGE), unix.ENOENT},
		{"link dir", unix.Link(p("d"), p("d2")), unix.EPERM},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, tc.err, tc.want)
		}
	}
	// The longest xattr name that fits (175 bytes) works.
	maxName := "user." + strings.Repeat("x", 170)
	must(t, unix.Setxattr(p(long), maxName, []byte("v"), 0))
	xbuf := make([]byte, 8)
	if n, err := unix.Getxattr(p(long), maxName, xbuf); err != nil || string(xbuf[:n]) != "v" {
		t.Errorf("175-byte xattr name: %v", err)
	}
	// A 255-byte name works and is listed.
	ents, err := os.ReadDir(v.Mnt)
	must(t, err)
	found := false
	for _, e := range ents {
		found = found || e.Name() == long
	}
	if !found {
		t.Errorf("255-byte name not listed: %v", ents)
	}
	// 4095-byte symlink target works.
	target := strings.Repeat("t", 4095)
	must(t, os.Symlink(target, p("sl")))
	if got, err := os.Readlink(p("sl")); err != nil || got != target {
		t.Errorf("4095-byte target: %d bytes, %v", len(got), err)
	}
	if st, err := os.Lstat(p("sl")); err != nil || st.Size() != 4095 {
		t.Errorf("symlink size %v", err)
	}
}

// TestHardLinks: nlink, shared data across names, rename over a link,
// symlinks refuse (EPERM, documented).
func TestHardLinks(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	a, b := filepath.Join(v.Mnt, "a"), filepath.Join(v.Mnt, strings.Repeat("b", 200))
	must(t, os.WriteFile(a, []byte("one"), 0o644))
	must(t, os.Link(a, b))
	for _, p := range []string{a, b} {
		var st unix.Stat_t
		must(t, unix.Stat(p, &st))
		if st.Nlink != 2 {
			t.Fatalf("%s nlink %d", p, st.Nlink)
		}
	}
	must(t, os.WriteFile(b, []byte("two, longer"), 0))
	if got, _ := os.ReadFile(a); string(got) != "two, longer" {
		t.Fatalf("via other link: %q", got)
	}
	must(t, os.Remove(a))
	if got, _ := os.ReadFile(b); string(got) != "two, longer" {
		t.Fatalf("after unlink of a: %q", got)
	}
	must(t, os.Symlink("x", filepath.Join(v.Mnt, "sl")))
	if err := os.Link(filepath.Join(v.Mnt, "sl"), filepath.Join(v.Mnt, "sl2")); !errors.Is(err, unix.EPERM) {
		t.Fatalf("link of symlink: %v, want EPERM", err)
	}
}

// TestOpenUnlinked: an open file keeps working after unlink.
func TestOpenUnlinked(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	p := filepath.Join(v.Mnt, "f")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	must(t, err)
	defer f.Close()
	_, err = f.Write(bytes.Repeat([]byte("x"), 5000))
	must(t, err)
	must(t, os.Remove(p))
	_, err = f.WriteAt([]byte("tail"), 9000)
	must(t, err)
	st, err := f.Stat()
	must(t, err)
	if st.Size() != 9004 {
		t.Fatalf("fstat size %d", st.Size())
	}
	must(t, f.Sync())
	buf := make([]byte, 9004)
	_, err = f.ReadAt(buf, 0)
	must(t, err)
	if buf[4999] != 'x' || buf[5000] != 0 || string(buf[9000:]) != "tail" {
		t.Fatal("content after unlink")
	}
	if _, err := os.Stat(p); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("stat after unlink: %v", err)
	}
	if left := mounttest.BackingFiles(t, v.Cipher); len(left) != 0 {
		t.Fatalf("backing entries left: %v", left)
	}
}

// TestLargeSparse: a file beyond 4 GiB, written sparsely, reads back.
func TestLargeSparse(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	p := filepath.Join(v.Mnt, "big")
	f, err := os.Create(p)
	must(t, err)
	defer f.Close()
	const off = 5<<30 + 123
	_, err = f.WriteAt([]byte("end"), off)
	must(t, err)
	st, err := f.Stat()
	must(t, err)
	if st.Size() != off+3 {
		t.Fatalf("size %d", st.Size())
	}
	buf := make([]byte, 10)
	_, err = f.ReadAt(buf, off-7)
	must(t, err)
	if !bytes.Equal(buf, append(make([]byte, 7), "end"...)) {
		t.Fatalf("read %q", buf)
	}
	_, err = f.ReadAt(buf, 1<<32)
	must(t, err)
	if !bytes.Equal(buf, make([]byte, 10)) {
		t.Fatalf("hole reads %q", buf)
	}
	// The backing file is sparse too.
	bf := mounttest.BackingFiles(t, v.Cipher)
	var bst unix.Stat_t
	must(t, unix.Stat(bf[0], &bst))
	if bst.Blocks*512 > 1<<20 {
		t.Errorf("backing file uses %d bytes", bst.Blocks*512)
	}
}

// TestAttrs: exact modes, nanosecond times, truncate, chown.
func TestAttrs(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	old := unix.Umask(0)
	defer unix.Umask(old)
	d := filepath.Join(v.Mnt, "d")
	must(t, unix.Mkdir(d, 0o151))
	var st unix.Stat_t
	must(t, unix.Stat(d, &st))
	if st.Mode&0o7777 != 0o151 {
		t.Fatalf("dir mode %o", st.Mode&0o7777)
	}
	f := filepath.Join(v.Mnt, "f")
	must(t, os.WriteFile(f, bytes.Repeat([]byte("z"), 70000), 0o640))
	mt := time.Unix(1234567890, 123456789)
	at := time.Unix(1111111111, 987654321)
	must(t, os.Chtimes(f, at, mt))
	must(t, os.Truncate(d+"/../f", 100000))
	must(t, os.Chtimes(f, at, mt))
	must(t, unix.Stat(f, &st))
	if st.Mtim.Sec != mt.Unix() || st.Mtim.Nsec != 123456789 || st.Atim.Nsec != 987654321 || st.Size != 100000 {
		t.Fatalf("stat %+v", st)
	}
	must(t, os.Chown(f, 1234, 5678))
	v.Remount(t)
	must(t, unix.Stat(f, &st))
	if st.Uid != 1234 || st.Gid != 5678 || st.Mtim.Nsec != 123456789 || st.Mode&0o7777 != 0o640 {
		t.Fatalf("after remount %+v", st)
	}
	b, err := os.ReadFile(f)
	must(t, err)
	if len(b) != 100000 || b[69999] != 'z' || b[70000] != 0 {
		t.Fatal("content after truncate grow")
	}
}

// TestXattrs on a file, an empty file and a directory.
func TestXattrs(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	f, e, d := filepath.Join(v.Mnt, "f"), filepath.Join(v.Mnt, "empty"), filepath.Join(v.Mnt, "d")
	must(t, os.WriteFile(f, []byte("data"), 0o644))
	must(t, os.WriteFile(e, nil, 0o644))
	must(t, os.Mkdir(d, 0o755))
	for _, p := range []string{f, e, d} {
		must(t, unix.Setxattr(p, "user.a", []byte("va"), 0))
		must(t, unix.Setxattr(p, "user.b", bytes.Repeat([]byte("b"), 1000), 0))
		if err := unix.Setxattr(p, "user.a", []byte("x"), unix.XATTR_CREATE); !errors.Is(err, unix.EEXIST) {
			t.Errorf("%s XATTR_CREATE: %v", p, err)
		}
		buf := make([]byte, 100)
		n, err := unix.Listxattr(p, buf)
		must(t, err)
		if string(buf[:n]) != "user.a\x00user.b\x00" && string(buf[:n]) != "user.b\x00user.a\x00" {
			t.Errorf("%s list %q", p, buf[:n])
		}
		n, err = unix.Getxattr(p, "user.a", buf)
		if err != nil || string(buf[:n]) != "va" {
			t.Errorf("%s get %q %v", p, buf[:n], err)
		}
		must(t, unix.Removexattr(p, "user.a"))
		if _, err := unix.Getxattr(p, "user.a", buf); !errors.Is(err, unix.ENODATA) {
			t.Errorf("%s after remove: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(e); len(b) != 0 {
		t.Errorf("empty file with xattr reads %q", b)
	}
}

// TestCreateOverStaleNegative: a file that appears in CIPHERDIR while the
// kernel still caches "no such name" is opened, not refused, by
// open(O_CREAT) without O_EXCL.
func TestCreateOverStaleNegative(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	p := filepath.Join(v.Mnt, "late")
	if _, err := os.Stat(p); !errors.Is(err, unix.ENOENT) {
		t.Fatal(err)
	}
	root, err := backing.OpenRoot(v.Cipher)
	must(t, err)
	defer backing.Close(root)
	id, err := v.Tree.DirIDs().ReadRoot(root)
	must(t, err)
	n, err := v.Tree.Name(id, "late")
	must(t, err)
	fd, err := v.Tree.Create(tree.NewDir(root, nil, nil), n, 0, 0o644)
	must(t, err)
	backing.Close(fd)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	must(t, err)
	_, err = f.WriteString("data")
	must(t, err)
	must(t, f.Close())
	if _, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("O_EXCL: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "data" {
		t.Fatalf("read %q", b)
	}
}

// TestDeepTree: a directory chain of one-byte names whose plaintext path is
// near PATH_MAX has a backing path far beyond it (encrypted names are
// longer); it must still work, also after a remount (cold caches).
func TestDeepTree(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	depth := (unix.PathMax - len(v.Mnt) - 10) / 2
	dirfd, err := unix.Open(v.Mnt, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	for range depth {
		must(t, unix.Mkdirat(dirfd, "a", 0o755))
		next, err := unix.Openat(dirfd, "a", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		must(t, err)
		unix.Close(dirfd)
		dirfd = next
	}
	fd, err := unix.Openat(dirfd, "f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	must(t, err)
	unix.Write(fd, []byte("deep"))
	unix.Close(fd)
	unix.Close(dirfd)
	full := v.Mnt + strings.Repeat("/a", depth) + "/f"
	if len(full) >= unix.PathMax {
		t.Fatalf("path %d bytes", len(full))
	}
	v.Remount(t)
	if b, err := os.ReadFile(full); err != nil || string(b) != "deep" {
		t.Fatalf("read deep file: %q %v", b, err)
	}
	must(t, os.RemoveAll(filepath.Join(v.Mnt, "a")))
}
