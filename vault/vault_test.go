package vault

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

var testPassword = []byte("vault test password")

// cheap are the fastest options: the KDF floor and the smallest chunk, so
// multi-chunk files stay small.
var cheap = Options{KDFTime: 1, KDFMemoryKiB: 8192, KDFThreads: 1, ChunkSize: 4096}

func newTestVault(t *testing.T) (*Vault, string) {
	t.Helper()
	dir := t.TempDir()
	v, err := Create(dir, testPassword, cheap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v, dir
}

func TestCreateOpen(t *testing.T) {
	v, dir := newTestVault(t)
	if err := v.WriteFile("hello.txt", []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := v.MasterKey()
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Stat("hello.txt"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Stat after Close: %v", err)
	}
	if _, err := Open(dir, []byte("wrong")); !errors.Is(err, ErrWrongPassword) {
		t.Fatalf("Open with a wrong password: %v", err)
	}
	for name, open := range map[string]func() (*Vault, error){
		"password":   func() (*Vault, error) { return Open(dir, testPassword) },
		"master key": func() (*Vault, error) { return OpenWithMasterKey(dir, key) },
	} {
		v2, err := open()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := v2.ReadFile("hello.txt")
		v2.Close()
		if err != nil || string(got) != "hello" {
			t.Fatalf("%s: ReadFile = %q, %v", name, got, err)
		}
	}
	if _, err := Create(dir, testPassword, cheap); err == nil {
		t.Fatal("Create in a non-empty directory succeeded")
	}
	if _, err := Create(t.TempDir(), testPassword, Options{Cipher: "rot13"}); err == nil {
		t.Fatal("Create with an unknown cipher succeeded")
	}
}

func TestFileSizes(t *testing.T) {
	v, dir := newTestVault(t)
	cs := v.ChunkSize()
	for _, size := range []int{0, 1, cs - 1, cs, cs + 1, 3*cs + 5} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i*31 + size)
		}
		name := "f" + strings.Repeat("x", size%7)
		if err := v.WriteFile(name, data, 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := v.ReadFile(name)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: ReadFile: %v (len %d)", size, err, len(got))
		}
		fi, err := v.Stat(name)
		if err != nil || fi.Size() != int64(size) || fi.Mode() != 0o640 {
			t.Fatalf("size %d: Stat = %v, %v", size, fi, err)
		}
		st := fi.Sys().(*unix.Stat_t)
		if want := v.sess.Engine().Suite().CipherSize(int64(size)); st.Size != want {
			t.Fatalf("size %d: backing size %d, want %d", size, st.Size, want)
		}
	}
	// No plaintext name reaches the backing directory.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "f") && !strings.Contains(e.Name(), ".") && len(e.Name()) < 10 {
			t.Fatalf("plaintext-looking backing name %q", e.Name())
		}
	}
}

// TestRandomAccess checks ReadAt/WriteAt/Truncate/Seek against a model.
func TestRandomAccess(t *testing.T) {
	v, _ := newTestVault(t)
	f, err := v.Create("model")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var model []byte
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 200 {
		switch rng.IntN(4) {
		case 0, 1:
			off := rng.IntN(5 * 4096)
			p := make([]byte, rng.IntN(9000)+1)
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			if _, err := f.WriteAt(p, int64(off)); err != nil {
				t.Fatalf("step %d WriteAt: %v", step, err)
			}
			if off+len(p) > len(model) {
				model = append(model, make([]byte, off+len(p)-len(model))...)
			}
			copy(model[off:], p)
		case 2:
			size := rng.IntN(6 * 4096)
			if err := f.Truncate(int64(size)); err != nil {
				t.Fatalf("step %d Truncate: %v", step, err)
			}
			if size < len(model) {
				model = model[:size]
			} else {
				model = append(model, make([]byte, size-len(model))...)
			}
		case 3:
			off := rng.IntN(len(model) + 10)
			p := make([]byte, rng.IntN(9000))
			n, err := f.ReadAt(p, int64(off))
			want := 0
			if off < len(model) {
				want = min(len(p), len(model)-off)
			}
			if n != want || (n < len(p) && err != io.EOF) || (err != nil && err != io.EOF) {
				t.Fatalf("step %d ReadAt(%d, %d) = %d, %v; want %d", step, len(p), off, n, err, want)
			}
			if off < len(model) && !bytes.Equal(p[:n], model[off:off+n]) {
				t.Fatalf("step %d: ReadAt content differs", step)
			}
		}
	}
	if pos, err := f.Seek(-3, io.SeekEnd); err != nil || pos != int64(len(model))-3 {
		t.Fatalf("Seek end: %d, %v", pos, err)
	}
	all, err := v.ReadFile("model")
	if err != nil || !bytes.Equal(all, model) {
		t.Fatalf("ReadFile after random ops: %v", err)
	}
}

func TestSharedOpenAndAppend(t *testing.T) {
	v, _ := newTestVault(t)
	a, err := v.OpenFile("log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.Open("log")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"one ", "two ", "three"} {
		if _, err := a.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := io.ReadAll(b)
	if err != nil || string(got) != "one two three" {
		t.Fatalf("reader sharing the inode got %q, %v", got, err)
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, unix.EBADF) {
		t.Fatalf("Write on a read-only file: %v", err)
	}
	if _, err := a.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("WriteAt with O_APPEND succeeded")
	}
	for _, f := range []*File{a, b} {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if n := v.eng.OpenFiles(); n != 0 {
		t.Fatalf("%d engine files left open", n)
	}
}

func TestDirectories(t *testing.T) {
	v, _ := newTestVault(t)
	long := strings.Repeat("L", 200) // stored as a long name with a sidecar
	for _, d := range []string{"a", "a/b", "a/b/" + long} {
		if err := v.Mkdir(d, 0o750); err != nil {
			t.Fatalf("Mkdir %s: %v", d, err)
		}
	}
	if err := v.MkdirAll("x/y/z", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := v.MkdirAll("x/y/z", 0o700); err != nil {
		t.Fatalf("MkdirAll on existing dirs: %v", err)
	}
	if err := v.Mkdir("a", 0o700); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Mkdir existing: %v", err)
	}
	if err := v.WriteFile("a/b/"+long+"/file", []byte("deep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile("a/z", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ents, err := v.ReadDir("a")
	if err != nil || len(ents) != 2 || ents[0].Name() != "b" || !ents[0].IsDir() || ents[1].Name() != "z" {
		t.Fatalf("ReadDir a = %v, %v", ents, err)
	}
	if _, err := v.Stat("a/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat missing: %v", err)
	}
	if _, err := v.Open("a"); !errors.Is(err, unix.EISDIR) {
		t.Fatalf("Open dir: %v", err)
	}
	if err := v.Remove("a/b"); !errors.Is(err, unix.ENOTEMPTY) {
		t.Fatalf("Remove non-empty dir: %v", err)
	}
	if err := v.Rename("a/b", "x/moved"); err != nil {
		t.Fatal(err)
	}
	if got, err := v.ReadFile("x/moved/" + long + "/file"); err != nil || string(got) != "deep" {
		t.Fatalf("after rename: %q, %v", got, err)
	}
	if err := v.Remove("x/moved/" + long + "/file"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"x/moved/" + long, "x/moved"} {
		if err := v.Remove(d); err != nil {
			t.Fatalf("Remove %s: %v", d, err)
		}
	}
	if _, err := v.Stat(strings.Repeat("n", 256)); !errors.Is(err, unix.ENAMETOOLONG) {
		t.Fatalf("256-byte name: %v", err)
	}
	root, err := v.Stat("/")
	if err != nil || !root.IsDir() {
		t.Fatalf("Stat root: %v, %v", root, err)
	}
}

func TestSymlinks(t *testing.T) {
	v, _ := newTestVault(t)
	for _, target := range []string{"../somewhere", "/abs/path", strings.Repeat("t/", 2000)} {
		if err := v.Symlink(target, "link"); err != nil {
			t.Fatal(err)
		}
		got, err := v.Readlink("link")
		if err != nil || got != target {
			t.Fatalf("Readlink = %.40q, %v", got, err)
		}
		fi, err := v.Stat("link")
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 || fi.Size() != int64(len(target)) {
			t.Fatalf("Stat symlink: %v, %v", fi, err)
		}
		if err := v.Rename("link", "link2"); err != nil {
			t.Fatal(err)
		}
		if got, err := v.Readlink("link2"); err != nil || got != target {
			t.Fatalf("Readlink after rename = %.40q, %v", got, err)
		}
		if err := v.Remove("link2"); err != nil {
			t.Fatal(err)
		}
	}
	// Paths never go through a symlink.
	if err := v.Mkdir("d", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := v.Symlink("d", "ld"); err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile("ld/x", nil, 0o600); err == nil {
		t.Fatal("wrote through a symlink")
	}
}

func TestXattrs(t *testing.T) {
	v, _ := newTestVault(t)
	if err := v.WriteFile("empty", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Mkdir("dir", 0o700); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []string{"empty", "dir"} {
		if _, err := v.GetXattr(obj, "user.a"); !errors.Is(err, unix.ENODATA) {
			t.Fatalf("%s: get missing: %v", obj, err)
		}
		if err := v.SetXattr(obj, "user.a", []byte("value a")); err != nil {
			t.Fatalf("%s: set: %v", obj, err)
		}
		if err := v.SetXattr(obj, "user.b", nil); err != nil {
			t.Fatalf("%s: set empty: %v", obj, err)
		}
		got, err := v.GetXattr(obj, "user.a")
		if err != nil || string(got) != "value a" {
			t.Fatalf("%s: get = %q, %v", obj, got, err)
		}
		list, err := v.ListXattr(obj)
		if err != nil || len(list) != 2 {
			t.Fatalf("%s: list = %q, %v", obj, list, err)
		}
		if err := v.RemoveXattr(obj, "user.a"); err != nil {
			t.Fatal(err)
		}
		if err := v.SetXattr(obj, "trusted.x", []byte("v")); !errors.Is(err, unix.ENOTSUP) {
			t.Fatalf("%s: non-user namespace: %v", obj, err)
		}
	}
	// The empty file got a header for its ID and still reads as empty.
	if got, err := v.ReadFile("empty"); err != nil || len(got) != 0 {
		t.Fatalf("empty file after setxattr: %q, %v", got, err)
	}
	if err := v.Symlink("x", "l"); err != nil {
		t.Fatal(err)
	}
	if err := v.SetXattr("l", "user.a", nil); !errors.Is(err, unix.ENOTSUP) {
		t.Fatalf("xattr on a symlink: %v", err)
	}
}

func TestTamperDetected(t *testing.T) {
	v, dir := newTestVault(t)
	if err := v.WriteFile("secret", bytes.Repeat([]byte("s"), 10000), 0o600); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var backingName string
	for _, e := range ents {
		if !strings.Contains(e.Name(), ".") {
			backingName = e.Name()
		}
	}
	p := filepath.Join(dir, backingName)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ReadFile("secret"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadFile of a tampered file: %v", err)
	}
	// A foreign file in the backing directory is reported, not hidden.
	if err := os.WriteFile(filepath.Join(dir, "foreign.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ents2, err := v.ReadDir("")
	var bad *BadEntriesError
	if !errors.As(err, &bad) || len(bad.Backing) != 1 || len(ents2) != 1 {
		t.Fatalf("ReadDir with a foreign file: %v, %v", ents2, err)
	}
}
