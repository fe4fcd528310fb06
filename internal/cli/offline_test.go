package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"golang.org/x/sys/unix"
)

// makePlainTree writes a small tree with the kinds of entries import and
// export handle.
func makePlainTree(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	mtime := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	files := map[string][]byte{
		"a.txt":                             []byte("alpha\n"),
		"empty":                             nil,
		"sub/big.bin":                       bytes.Repeat([]byte("0123456789abcdef"), 20000),
		"sub/deeper/x.conf":                 []byte("x=1\n"),
		"sub/" + strings.Repeat("long", 50): []byte("long name"),
	}
	for name, data := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../a.txt", filepath.Join(src, "sub/link")); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		for _, name := range []string{"empty", "sub/link", "sub/deeper"} {
			if err := os.Lchown(filepath.Join(src, name), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := unix.Setxattr(filepath.Join(src, "a.txt"), "user.color", []byte("blue"), 0); err != nil {
		t.Logf("no xattrs on this file system: %v", err)
	}
	return src
}

// sameTree compares two plaintext trees: names, types, contents, modes of
// files, symlink targets, file mtimes.
func sameTree(t *testing.T, want, got string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		q := filepath.Join(got, rel)
		wi, _ := os.Lstat(p)
		gi, err := os.Lstat(q)
		if err != nil {
			t.Errorf("%s missing: %v", rel, err)
			return nil
		}
		n++
		if ws, gs := wi.Sys().(*syscall.Stat_t), gi.Sys().(*syscall.Stat_t); ws.Uid != gs.Uid || ws.Gid != gs.Gid {
			t.Errorf("%s: owner %d:%d, want %d:%d", rel, gs.Uid, gs.Gid, ws.Uid, ws.Gid)
		}
		if wi.Mode().Type() != gi.Mode().Type() {
			t.Errorf("%s: type %v, want %v", rel, gi.Mode().Type(), wi.Mode().Type())
			return nil
		}
		switch {
		case wi.Mode().IsRegular():
			a, _ := os.ReadFile(p)
			b, _ := os.ReadFile(q)
			if !bytes.Equal(a, b) || wi.Mode() != gi.Mode() || !wi.ModTime().Equal(gi.ModTime()) {
				t.Errorf("%s: content/mode/mtime differ (%v %v vs %v %v)", rel, gi.Mode(), gi.ModTime(), wi.Mode(), wi.ModTime())
			}
		case wi.Mode()&fs.ModeSymlink != 0:
			a, _ := os.Readlink(p)
			b, _ := os.Readlink(q)
			if a != b {
				t.Errorf("%s: target %q, want %q", rel, b, a)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 8 {
		t.Fatalf("compared only %d entries", n)
	}
}

func TestImportExport(t *testing.T) {
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	src := makePlainTree(t)
	run(t, "", "import", "--passfile", pf, dir, src, "in").want(t, 0)
	// Importing over existing entries fails per entry and says so.
	r := run(t, "", "import", "--passfile", pf, dir, src, "in")
	if r.code != ExitError || !strings.Contains(r.stderr, "exists") {
		t.Fatalf("second import: %d %s", r.code, r.stderr)
	}

	r = run(t, "", "ls", "-R", "--passfile", pf, dir)
	r.want(t, 0)
	for _, want := range []string{"in/a.txt", "in/sub/big.bin", "in/sub/deeper/x.conf", "in/sub/link"} {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Fatalf("ls -R lacks %s:\n%s", want, r.stdout)
		}
	}
	r = run(t, "", "ls", "-l", "--passfile", pf, dir, "in/sub")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "link -> ../a.txt") || !strings.Contains(r.stdout, "320000 ") {
		t.Fatalf("ls -l:\n%s", r.stdout)
	}
	r = run(t, "", "cat", "--passfile", pf, dir, "in/a.txt", "in/sub/deeper/x.conf")
	r.want(t, 0)
	if r.stdout != "alpha\nx=1\n" {
		t.Fatalf("cat: %q", r.stdout)
	}

	dest := filepath.Join(t.TempDir(), "out")
	run(t, "", "export", "--passfile", pf, dir, dest, "in").want(t, 0)
	sameTree(t, src, dest)
	if v, err := unix.Getxattr(filepath.Join(src, "a.txt"), "user.color", make([]byte, 16)); err == nil && v > 0 {
		buf := make([]byte, 16)
		n, err := unix.Getxattr(filepath.Join(dest, "a.txt"), "user.color", buf)
		if err != nil || string(buf[:n]) != "blue" {
			t.Fatalf("xattr not carried through: %q, %v", buf[:n], err)
		}
	}
	// A single file exports into DESTDIR.
	dest2 := t.TempDir()
	run(t, "", "export", "--passfile", pf, dir, dest2, "in/a.txt").want(t, 0)
	if b, _ := os.ReadFile(filepath.Join(dest2, "a.txt")); string(b) != "alpha\n" {
		t.Fatalf("single-file export: %q", b)
	}
	run(t, "", "export", "--passfile", pf, dir, dest2).want(t, ExitError) // not empty
	run(t, "", "cat", "--passfile", pf, dir, "in/missing").want(t, ExitError)
	run(t, "", "ls", "--passfile", writePassfile(t, "bad"), dir).want(t, ExitWrongPassword)
}

func TestEncryptDecryptPathCommands(t *testing.T) {
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	run(t, "", "import", "--passfile", pf, dir, makePlainTree(t)).want(t, 0)
	r := run(t, "", "encrypt-path", "--passfile", pf, dir, "sub/deeper/x.conf")
	r.want(t, 0)
	enc := strings.TrimSpace(r.stdout)
	if strings.Contains(enc, "deeper") || strings.Count(enc, "/") != 2 {
		t.Fatalf("encrypt-path: %q", enc)
	}
	if _, err := os.Stat(filepath.Join(dir, enc)); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{enc, filepath.Join(dir, enc)} {
		r = run(t, "", "decrypt-path", "--passfile", pf, dir, arg)
		r.want(t, 0)
		if r.stdout != "sub/deeper/x.conf\n" {
			t.Fatalf("decrypt-path(%s) = %q", arg, r.stdout)
		}
	}
	run(t, "", "decrypt-path", "--passfile", pf, dir, "garbage").want(t, ExitCorruptData)
}

func TestOfflineTamper(t *testing.T) {
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	run(t, "", "import", "--passfile", pf, dir, makePlainTree(t)).want(t, 0)
	r := run(t, "", "encrypt-path", "--passfile", pf, dir, "sub/big.bin")
	r.want(t, 0)
	p := filepath.Join(dir, strings.TrimSpace(r.stdout))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[100000] ^= 0x40
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "", "cat", "--passfile", pf, dir, "sub/big.bin").want(t, ExitCorruptData)
	// export goes on past the damaged file, reports it, and fails with 11.
	dest := filepath.Join(t.TempDir(), "out")
	r = run(t, "", "export", "--passfile", pf, dir, dest)
	if r.code != ExitCorruptData || !strings.Contains(r.stderr, "big.bin") {
		t.Fatalf("export of a damaged vault: %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dest, "sub", "big.bin")); err == nil {
		t.Fatal("damaged file exported partially")
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "a.txt")); string(b) != "alpha\n" {
		t.Fatal("undamaged file not exported")
	}
	// A foreign file in CIPHERDIR: ls shows the rest and exits 11.
	if err := os.WriteFile(filepath.Join(dir, "stray.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "ls", "--passfile", pf, dir)
	if r.code != ExitCorruptData || !strings.Contains(r.stdout, "a.txt") || !strings.Contains(r.stderr, "stray.txt") {
		t.Fatalf("ls with a foreign file: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestImportRefusesMounted(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	pf := writePassfile(t, "pw")
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	run(t, "", "import", "--passfile", pf, dir, makePlainTree(t)).want(t, ExitCipherDir)
	run(t, "", "unmount", mnt).want(t, 0)
}
