package engine_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/session"
)

// revChunk is the chunk size of the reverse tests' views.
const revChunk = content.MinChunk

// newReverseSession builds a reverse session of plain from parameters;
// plain gets a dummy reverse config (the view shows its bytes).
func newReverseSession(t *testing.T, plain string) *session.Reverse {
	t.Helper()
	if err := os.WriteFile(filepath.Join(plain, engine.ReverseConfigName), []byte("{}"), 0o400); err != nil {
		t.Fatal(err)
	}
	k, err := kdf.New(bytes.NewReader(make([]byte, 64)), 1, kdf.MinMemoryKiB, 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.NewReverse(plain, config.NewParams(string(content.AES256SIV), revChunk, k), make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newReverseView opens the view of plain (no mount), with excludes.
func newReverseView(t *testing.T, plain string, excludes ...string) *engine.ReverseView {
	t.Helper()
	v, err := newReverseSession(t, plain).View().Open(engine.ReverseOptions{Excludes: excludes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// revFill returns n deterministic pseudo-random bytes for seed.
func revFill(seed string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	block := sha256.Sum256([]byte(seed))
	for len(out) < n {
		out = append(out, block[:]...)
		block = sha256.Sum256(block[:])
	}
	return out[:n]
}

func TestReverseExcluded(t *testing.T) {
	v := newReverseView(t, t.TempDir(), "*.tmp", "cache", "a/b", "x/*/y")
	name := engine.ReverseConfigName
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{name, true}, {name + ".tmp", true}, {"d/" + name, false},
		{"f.tmp", true}, {"d/e/f.tmp", true}, {"f.tmpx", false},
		{"cache", true}, {"d/cache", true}, {"cachex", false},
		{"a/b", true}, {"c/a/b", false}, {"a/b/c", false}, // below a/b is unreachable anyway
		{"x/1/y", true}, {"x/1/2/y", false},
		{"one", false}, {"", false},
	} {
		if got := v.Excluded(tc.rel); got != tc.want {
			t.Errorf("Excluded(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
}

// TestReverseBadPattern: a malformed exclude pattern is refused at Open.
func TestReverseBadPattern(t *testing.T) {
	s := newReverseSession(t, t.TempDir())
	for _, pat := range []string{"[", ""} {
		if _, err := s.View().Open(engine.ReverseOptions{Excludes: []string{pat}}); !errors.Is(err, engine.ErrPattern) {
			t.Errorf("Open with exclude %q: %v, want ErrPattern", pat, err)
		}
	}
}

// readAll reads stored bytes [off, off+len(out)) of f, which lie inside it.
func readAll(f *engine.ReverseFile, out []byte, off int64) error {
	n, err := f.ReadAt(out, off)
	if err == io.EOF && n == len(out) {
		err = nil
	}
	return err
}

// TestReverseFileChangesWhileOpen: the ciphertext follows the size at
// open; a file that shrinks below it fails with ErrChanged instead of
// inventing bytes, and one that grows still gives the complete old-size
// ciphertext.
func TestReverseFileChangesWhileOpen(t *testing.T) {
	plain := t.TempDir()
	v := newReverseView(t, plain)
	path := filepath.Join(plain, "f")
	for _, tc := range []struct {
		what    string
		newSize int64
		wantErr error
	}{
		{"grows", 5 * revChunk, nil},
		{"shrinks", revChunk, engine.ErrChanged},
	} {
		t.Run(tc.what, func(t *testing.T) {
			if err := os.WriteFile(path, revFill("f", 3*revChunk), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := v.OpenFile("f")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.PlainSize() != 3*revChunk || f.Size() != v.CipherSize(3*revChunk) {
				t.Fatalf("sizes %d, %d", f.PlainSize(), f.Size())
			}
			before := make([]byte, v.CipherSize(3*revChunk))
			if err := readAll(f, before, 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, tc.newSize); err != nil {
				t.Fatal(err)
			}
			after := make([]byte, len(before))
			err = readAll(f, after, 0)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("read after change: %v, want %v", err, tc.wantErr)
			}
			if err == nil && !bytes.Equal(before, after) {
				t.Fatal("ciphertext of the open file changed")
			}
		})
	}
}

// TestReverseOpenFileNotRegular: OpenFile follows no symlink and opens
// only a regular file (ErrStale otherwise: the entry changed type).
func TestReverseOpenFileNotRegular(t *testing.T) {
	plain := t.TempDir()
	v := newReverseView(t, plain)
	os.WriteFile(filepath.Join(plain, "f"), []byte("x"), 0o644)
	os.Symlink("f", filepath.Join(plain, "l"))
	os.Mkdir(filepath.Join(plain, "d"), 0o755)
	if _, err := v.OpenFile("l"); err == nil {
		t.Fatal("opened through a symlink")
	}
	if _, err := v.OpenFile("d"); !errors.Is(err, engine.ErrStale) {
		t.Fatalf("OpenFile of a directory: %v, want ErrStale", err)
	}
}

// TestReverseListShape: a directory's view has encryptfs.dirid,
// encryptfs.conf in the root only, sidecars for long names and long
// targets, and no hidden or excluded entries; every listed name is found
// again by Lookup.
func TestReverseListShape(t *testing.T) {
	plain := t.TempDir()
	v := newReverseView(t, plain, "*.tmp")
	long := string(bytes.Repeat([]byte("n"), 170))
	os.WriteFile(filepath.Join(plain, long), nil, 0o644)
	os.WriteFile(filepath.Join(plain, "x.tmp"), nil, 0o644)
	os.Symlink(string(bytes.Repeat([]byte("t"), 3500)), filepath.Join(plain, "l"))
	os.Mkdir(filepath.Join(plain, "d"), 0o755)
	count := func(ents []engine.ViewEntry) map[engine.ViewKind]int {
		m := map[engine.ViewKind]int{}
		for _, e := range ents {
			m[e.Kind]++
		}
		return m
	}
	root, err := v.List("")
	if err != nil {
		t.Fatal(err)
	}
	want := map[engine.ViewKind]int{engine.ViewDirID: 1, engine.ViewConfig: 1, engine.ViewFile: 1,
		engine.ViewNameSidecar: 1, engine.ViewSymlink: 1, engine.ViewLinkSidecar: 1, engine.ViewDir: 1}
	if got := count(root); len(got) != len(want) || len(root) != 7 {
		t.Fatalf("root view kinds %v (%d entries), want %v", got, len(root), want)
	}
	for k, n := range want {
		if count(root)[k] != n {
			t.Errorf("root view: %d of kind %d, want %d", count(root)[k], k, n)
		}
	}
	sub, err := v.List("d")
	if err != nil {
		t.Fatal(err)
	}
	if len(sub) != 1 || sub[0].Kind != engine.ViewDirID {
		t.Fatalf("empty dir view: %+v", sub)
	}
	for _, e := range root {
		got, err := v.Lookup("", e.Name)
		if err != nil || got.Kind != e.Kind || got.Rel != e.Rel {
			t.Errorf("Lookup(%q) = %+v, %v; listed as %+v", e.Name, got, err, e)
		}
	}
	if _, err := v.Lookup("", "not-a-name"); !errors.Is(err, engine.ErrNoEntry) {
		t.Errorf("Lookup of an unknown name: %v, want ErrNoEntry", err)
	}
}

// TestReverseConfigShownAsUnlocked: the view's encryptfs.conf is the
// reverse config the session unlocked, even if the file in PLAINDIR is
// replaced between the unlock and the view (it was read again, so a copy
// of the view held a config the view's keys do not belong to).
func TestReverseConfigShownAsUnlocked(t *testing.T) {
	plain := t.TempDir()
	create := func() []byte {
		k, err := kdf.Cheapest(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := config.Create(config.NewParams(string(content.AES256SIV), revChunk, k), []byte("pw"), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		data, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := config.WriteFileAtomic(plain, engine.ReverseConfigName, data); err != nil {
			t.Fatal(err)
		}
		return data
	}
	unlocked := create()
	s, err := session.OpenReverse(plain, []byte("pw"), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	swapped := create()
	v, err := s.View().Open(engine.ReverseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if bytes.Equal(unlocked, swapped) {
		t.Fatal("the two configs are equal")
	}
	if !bytes.Equal(v.Config(), unlocked) {
		t.Fatalf("the view shows %q, want the unlocked config %q", v.Config(), unlocked)
	}
	data, err := v.Content(engine.ViewConfig, "")
	if err != nil || !bytes.Equal(data, unlocked) {
		t.Fatalf("Content(ViewConfig) = %q, %v; want the unlocked config", data, err)
	}
}
