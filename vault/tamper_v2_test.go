package vault

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/session"
)

// newBoundVault is newTestVault with location binding on (format v2 part
// 2) on a v1 config, through the session's test hook
// session.Options.BoundVaultID (a v2 config turns it on with the flag
// "BoundLocations").
func newBoundVault(t *testing.T) (*Vault, string) {
	t.Helper()
	dir := t.TempDir()
	v, err := create(dir, testPassword, cheap, session.Options{BoundVaultID: bytes.Repeat([]byte{0x5a}, bind.IDSize)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v, dir
}

// wantMisplaced fails unless err is the corruption a misplaced object
// gives: bind.ErrMisplaced, reported as ErrCorrupt (EIO, exit 11).
func wantMisplaced(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, bind.ErrMisplaced) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: %v, want bind.ErrMisplaced (ErrCorrupt)", what, err)
	}
}

func mustWrite(t *testing.T, v *Vault, name, data string) {
	t.Helper()
	if err := v.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, v *Vault, name, want string) {
	t.Helper()
	if got, err := v.ReadFile(name); err != nil || string(got) != want {
		t.Fatalf("read %s: %q, %v; want %q", name, got, err, want)
	}
}

// TestTamperV2 runs the storage attacks of TestTamperV1 that location
// binding closes on a vault with binding on, and asserts each is
// detected: the moved, copied or grafted object reads as corrupt.
func TestTamperV2(t *testing.T) {
	// A's encryptfs.dirid copied into B (and an entry of A moved in):
	// B's ID file is not bound to B's place.
	t.Run("dirid-copy", func(t *testing.T) {
		v, dir := newBoundVault(t)
		for _, d := range []string{"A", "B"} {
			if err := v.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		mustWrite(t, v, "A/secret", "in A")
		a, b := backingPath(t, v, dir, "A"), backingPath(t, v, dir, "B")
		entry := backingPath(t, v, dir, "A/secret")
		replaceFile(t, filepath.Join(b, names.DirIDFile), readFile(t, filepath.Join(a, names.DirIDFile)))
		if err := os.Rename(entry, filepath.Join(b, filepath.Base(entry))); err != nil {
			t.Fatal(err)
		}
		_, err := v.ReadFile("B/secret")
		wantMisplaced(t, "B/secret", err)
		_, err = v.ReadDir("B")
		wantMisplaced(t, "list B", err)
	})

	// Two files' backing names swapped in one directory: each one's
	// contents are bound to the other name.
	t.Run("file-swap-in-directory", func(t *testing.T) {
		v, dir := newBoundVault(t)
		mustWrite(t, v, "f", "contents of f")
		mustWrite(t, v, "g", "contents of g")
		f, g := backingPath(t, v, dir, "f"), backingPath(t, v, dir, "g")
		tmp := f + "x"
		for _, r := range [][2]string{{f, tmp}, {g, f}, {tmp, g}} {
			if err := os.Rename(r[0], r[1]); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []string{"f", "g"} {
			_, err := v.ReadFile(n)
			wantMisplaced(t, n, err)
		}
	})

	// A file's backing contents copied over a file in another directory.
	t.Run("entry-moved-to-another-directory", func(t *testing.T) {
		v, dir := newBoundVault(t)
		for _, d := range []string{"A", "B"} {
			if err := v.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		mustWrite(t, v, "A/secret", "in A")
		mustWrite(t, v, "B/public", "in B")
		replaceFile(t, backingPath(t, v, dir, "B/public"), readFile(t, backingPath(t, v, dir, "A/secret")))
		_, err := v.ReadFile("B/public")
		wantMisplaced(t, "B/public", err)
	})

	// Directory A (with its ID file and entries) put in place of B/sub:
	// names decrypt (the dirid is A's), but A's ID file is bound to A's
	// place.
	t.Run("subtree-graft", func(t *testing.T) {
		v, dir := newBoundVault(t)
		for _, d := range []string{"A", "B", "B/sub"} {
			if err := v.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		mustWrite(t, v, "A/secret", "in A")
		sub := backingPath(t, v, dir, "B/sub")
		if err := os.Remove(filepath.Join(sub, names.DirIDFile)); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(sub); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(backingPath(t, v, dir, "A"), sub); err != nil {
			t.Fatal(err)
		}
		_, err := v.ReadFile("B/sub/secret")
		wantMisplaced(t, "B/sub/secret", err)
	})

	// A sync-conflict alias of f whose contents are g's: the alias is
	// checked against the name it is an alias of, f.
	t.Run("conflict-alias-other-contents", func(t *testing.T) {
		v, dir := newBoundVault(t)
		mustWrite(t, v, "f", "contents of f")
		mustWrite(t, v, "g", "contents of g")
		const sfx = ".sync-conflict-20240101-120000-ABCDEFG"
		f := backingPath(t, v, dir, "f")
		if err := os.WriteFile(f+sfx, readFile(t, f), 0o600); err != nil {
			t.Fatal(err)
		}
		mustRead(t, v, "f"+sfx, "contents of f") // a genuine conflict copy reads
		replaceFile(t, f+sfx, readFile(t, backingPath(t, v, dir, "g")))
		_, err := v.ReadFile("f" + sfx)
		wantMisplaced(t, "alias with g's contents", err)
	})

	// A file renamed, then its old backing bytes put back under the old
	// name: after the rename the old place's binding was dropped.
	t.Run("rename-then-restore-old-name", func(t *testing.T) {
		v, dir := newBoundVault(t)
		mustWrite(t, v, "f", "data")
		old := backingPath(t, v, dir, "f")
		if err := v.Rename("f", "h"); err != nil {
			t.Fatal(err)
		}
		mustRead(t, v, "h", "data")
		if err := os.WriteFile(old, readFile(t, backingPath(t, v, dir, "h")), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := v.ReadFile("f")
		wantMisplaced(t, "old name", err)
	})
}

// TestBoundOps: renames (in a directory, across directories, of
// directories with their subtrees, over an existing target), unlink and
// rmdir on a vault with binding on; everything reads back after a reopen.
func TestBoundOps(t *testing.T) {
	v, dir := newBoundVault(t)
	for _, d := range []string{"A", "A/deep", "B"} {
		if err := v.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, v, "A/deep/x", "x")
	mustWrite(t, v, "A/f", "f")
	mustWrite(t, v, "B/target", "old target")
	mustWrite(t, v, "empty", "")
	long := string(bytes.Repeat([]byte{'L'}, 200))
	steps := [][2]string{
		{"A/f", "A/g"},           // same directory
		{"A/g", "B/g"},           // across directories
		{"B/g", "B/target"},      // over an existing file
		{"A", "B/A2"},            // a directory with its subtree
		{"empty", "B/" + long},   // an empty file, to a long name
		{"B/A2/deep", "B/deep2"}, // a directory across directories
		{"B/deep2", "B/" + long + "d"},
	}
	for _, s := range steps {
		if err := v.Rename(s[0], s[1]); err != nil {
			t.Fatalf("rename %s %s: %v", s[0], s[1], err)
		}
	}
	check := func(v *Vault) {
		t.Helper()
		mustRead(t, v, "B/target", "f")
		mustRead(t, v, "B/"+long+"d/x", "x")
		mustRead(t, v, "B/"+long, "")
		if ents, err := v.ReadDir("B/A2"); err != nil || len(ents) != 0 {
			t.Fatalf("B/A2: %v, %v", ents, err)
		}
	}
	check(v)
	if err := v.Remove("B/A2"); err != nil {
		t.Fatal(err)
	}
	if err := v.Remove("B/target"); err != nil {
		t.Fatal(err)
	}
	v.Close()
	if v1, err := Open(dir, testPassword); err == nil {
		_, err = v1.ReadDir("B")
		v1.Close()
		if err == nil {
			t.Fatal("a bound vault read without binding: the v1 reader must fail on its v2 ID files")
		}
	}
	so := session.Options{BoundVaultID: bytes.Repeat([]byte{0x5a}, bind.IDSize)}
	s, err := session.Open(dir, testPassword, so)
	if err != nil {
		t.Fatal(err)
	}
	v3, err := fromSession(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v3.Close()
	mustRead(t, v3, "B/"+long+"d/x", "x")
	if _, err := v3.ReadFile("B/target"); err == nil {
		t.Fatal("removed file still there")
	}
}

// TestBoundLink: a file takes a second name (tree.Link), both names
// read, a third link moves the bindings to the links file (no EMLINK:
// docs/format.md §14), and after a name is removed its binding goes.
func TestBoundLink(t *testing.T) {
	v, _ := newBoundVault(t)
	mustWrite(t, v, "f", "linked")
	link := func(from, to string) error {
		a, err := v.resolve(from)
		if err != nil {
			t.Fatal(err)
		}
		defer a.release()
		b, err := v.resolve(to)
		if err != nil {
			t.Fatal(err)
		}
		defer b.release()
		return a.parent.Link(a.name, b.parent, b.name)
	}
	if err := link("f", "g"); err != nil {
		t.Fatal(err)
	}
	mustRead(t, v, "g", "linked")
	mustRead(t, v, "f", "linked")
	if err := link("f", "h"); err != nil {
		t.Fatalf("third link: %v", err)
	}
	for _, n := range []string{"f", "g", "h"} {
		mustRead(t, v, n, "linked")
	}
	if err := v.Remove("f"); err != nil {
		t.Fatal(err)
	}
	if err := link("g", "i"); err != nil {
		t.Fatalf("link after unlink: %v", err)
	}
	for _, n := range []string{"g", "h", "i"} {
		mustRead(t, v, n, "linked")
	}
}
