package engine_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/sys/unix"
)

// newVault makes an empty vault in a temporary directory, with location
// binding if bound, and returns its engine.
func newVault(t *testing.T, bound bool) (*engine.Vault, string) {
	t.Helper()
	dir := t.TempDir()
	p := config.Params{FormatVersion: 1, Cipher: "aes-256-gcm", ChunkSize: 4096}
	var o session.Options
	if bound {
		o.BoundVaultID = bytes.Repeat([]byte{0x5a}, bind.IDSize)
	}
	s, err := session.New(dir, p, bytes.Repeat([]byte{9}, 32), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	fd, err := backing.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close(fd)
	if _, err := s.Tree().DirIDs().InitRoot(fd); err != nil {
		t.Fatal(err)
	}
	return s.Vault(), dir
}

// create makes file plain in d with contents data and returns its name.
func create(t *testing.T, d *engine.Dir, plain, data string) engine.Name {
	t.Helper()
	n, err := d.NewName(plain)
	if err != nil {
		t.Fatal(err)
	}
	f, err := d.Create(n, 0, 0o644, engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		t.Fatal(err)
	}
	return n
}

func root(t *testing.T, v *engine.Vault) *engine.Dir {
	t.Helper()
	d, err := v.Root()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestOneTable: every open of an inode shares its one File, whichever
// door (Dir handle) opens it, and the last Release closes it.
func TestOneTable(t *testing.T) {
	for _, bound := range []bool{false, true} {
		v, _ := newVault(t, bound)
		d := root(t, v)
		n := create(t, d, "f", "hello")
		a, err := d.Open(n, engine.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d2 := root(t, v)
		n2, _, err := d2.Lookup("f", false)
		if err != nil {
			t.Fatal(err)
		}
		b, err := d2.Open(n2, engine.OpenOptions{ForWrite: true})
		if err != nil {
			t.Fatal(err)
		}
		if a != b || v.OpenFiles() != 1 {
			t.Fatalf("bound %v: two opens gave %p and %p, %d open files; want one shared", bound, a, b, v.OpenFiles())
		}
		if got, ok := v.Lookup(a.Key()); !ok || got != a {
			t.Fatalf("Lookup(%v) = %p, %v", a.Key(), got, ok)
		} else {
			got.Release()
		}
		attr, err := d.Attr(n)
		if err != nil || attr.Size != 5 {
			t.Fatalf("Attr: size %d, %v; want 5", attr.Size, err)
		}
		for _, f := range []*engine.File{a, b} {
			if err := f.Release(); err != nil {
				t.Fatal(err)
			}
		}
		if n := v.OpenFiles(); n != 0 {
			t.Fatalf("%d files open after the last Release", n)
		}
	}
}

// TestOpenWant: an open that expects another inode at the name (a rename
// replaced what the door looked up) fails as not found, without opening
// the newcomer.
func TestOpenWant(t *testing.T) {
	v, _ := newVault(t, true)
	d := root(t, v)
	n := create(t, d, "f", "x")
	st, err := d.Lstat(n)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Open(n, engine.OpenOptions{Want: engine.FileKey{Ino: st.Ino + 1}})
	if !fault.Is(err, fault.NotFound) {
		t.Fatalf("open of another inode: %v, want not found", err)
	}
	if v.OpenFiles() != 0 {
		t.Fatal("the newcomer was opened")
	}
	f, err := d.Open(n, engine.OpenOptions{Want: engine.FileKey{Dev: uint64(st.Dev), Ino: st.Ino}})
	if err != nil {
		t.Fatal(err)
	}
	f.Release()
}

// TestOpenMisplaced: a file found at a name it is not bound to (moved
// there behind the engine's back) stays misplaced however often the open
// tries again: corruption, not a lost race.
func TestOpenMisplaced(t *testing.T) {
	v, dir := newVault(t, true)
	d := root(t, v)
	a := create(t, d, "a", "contents")
	b, err := d.NewName("b")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, a.Backing), filepath.Join(dir, b.Backing)); err != nil {
		t.Fatal(err)
	}
	_, err = d.Open(b, engine.OpenOptions{})
	if !errors.Is(err, bind.ErrMisplaced) || !engine.IsMisplaced(err) {
		t.Fatalf("open of a misplaced file: %v, want bind.ErrMisplaced", err)
	}
}

// TestRenameRebindsOpenFile: with location binding a rename rebinds the
// file through its one open File (the engine is the tree's FileSource),
// so the handle opened before the rename and the name after it share it.
func TestRenameRebindsOpenFile(t *testing.T) {
	v, _ := newVault(t, true)
	d := root(t, v)
	a := create(t, d, "a", "before")
	f, err := d.Open(a, engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	sub, err := d.NewName("sub")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	sd, err := d.Sub(sub)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	b, err := sd.NewName("b")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Rename(a, sd, b, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("after!"), 0); err != nil {
		t.Fatal(err)
	}
	g, err := sd.Open(b, engine.OpenOptions{})
	if err != nil {
		t.Fatalf("open at the new place: %v", err)
	}
	defer g.Release()
	if g != f {
		t.Fatal("the renamed file was opened twice")
	}
	buf := make([]byte, 6)
	if _, err := g.ReadAt(buf, 0); err != nil || string(buf) != "after!" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if _, err := d.Open(a, engine.OpenOptions{}); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("open at the old name: %v, want ENOENT", err)
	}
}

// TestCreateExists: Create is exclusive.
func TestCreateExists(t *testing.T) {
	v, _ := newVault(t, false)
	d := root(t, v)
	n := create(t, d, "f", "")
	if _, err := d.Create(n, 0, 0o644, engine.OpenOptions{}); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("second Create: %v, want EEXIST", err)
	}
}
