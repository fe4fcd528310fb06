package reversefs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
)

// newTestRoot builds a Root over plain without mounting.
func newTestRoot(t *testing.T, plain string, excludes ...string) *Root {
	t.Helper()
	if err := os.WriteFile(filepath.Join(plain, ConfigName), []byte("{}"), 0o400); err != nil {
		t.Fatal(err)
	}
	k, err := kdf.New(bytes.NewReader(make([]byte, 64)), 1, kdf.MinMemoryKiB, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRoot(t, plain, config.NewParams(string(content.AES256SIV), testChunk, k), make([]byte, 32), Options{Excludes: excludes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestExcluded(t *testing.T) {
	r := newTestRoot(t, t.TempDir(), "*.tmp", "cache", "a/b", "x/*/y")
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{ConfigName, true}, {ConfigName + ".tmp", true}, {"d/" + ConfigName, false},
		{"f.tmp", true}, {"d/e/f.tmp", true}, {"f.tmpx", false},
		{"cache", true}, {"d/cache", true}, {"cachex", false},
		{"a/b", true}, {"c/a/b", false}, {"a/b/c", false}, // below a/b is unreachable anyway
		{"x/1/y", true}, {"x/1/2/y", false},
		{"one", false}, {"", false},
	} {
		if got := r.v.Excluded(tc.rel); got != tc.want {
			t.Errorf("excluded(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
}

// TestFileChangesWhileOpen: the ciphertext follows the size at open; a
// file that shrinks below it fails with ErrChanged instead of inventing
// bytes, and one that grows still gives the complete old-size ciphertext.
func TestFileChangesWhileOpen(t *testing.T) {
	plain := t.TempDir()
	r := newTestRoot(t, plain)
	path := filepath.Join(plain, "f")
	for _, tc := range []struct {
		what    string
		newSize int64
		wantErr error
	}{
		{"grows", 5 * testChunk, nil},
		{"shrinks", testChunk, ErrChanged},
	} {
		t.Run(tc.what, func(t *testing.T) {
			if err := os.WriteFile(path, fill("f", 3*testChunk), 0o644); err != nil {
				t.Fatal(err)
			}
			h, err := r.openFile("f")
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release(t.Context())
			before := make([]byte, r.v.CipherSize(3*testChunk))
			if err := h.fill(before, 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, tc.newSize); err != nil {
				t.Fatal(err)
			}
			after := make([]byte, len(before))
			err = h.fill(after, 0)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("fill after change: %v, want %v", err, tc.wantErr)
			}
			if err == nil && !bytes.Equal(before, after) {
				t.Fatal("ciphertext of the open file changed")
			}
		})
	}
}

// TestListShape: a directory's view has encryptfs.dirid, encryptfs.conf
// in the root only, sidecars for long names and long targets, and no
// hidden or excluded entries.
func TestListShape(t *testing.T) {
	plain := t.TempDir()
	r := newTestRoot(t, plain, "*.tmp")
	long := string(bytes.Repeat([]byte("n"), 170))
	os.WriteFile(filepath.Join(plain, long), nil, 0o644)
	os.WriteFile(filepath.Join(plain, "x.tmp"), nil, 0o644)
	os.Symlink(string(bytes.Repeat([]byte("t"), 3500)), filepath.Join(plain, "l"))
	os.Mkdir(filepath.Join(plain, "d"), 0o755)
	count := func(ents []viewEntry) map[kind]int {
		m := map[kind]int{}
		for _, e := range ents {
			m[e.Kind]++
		}
		return m
	}
	root, err := r.v.List("")
	if err != nil {
		t.Fatal(err)
	}
	want := map[kind]int{kindDirID: 1, kindConfig: 1, kindFile: 1, kindNameSidecar: 1, kindSymlink: 1, kindLinkSidecar: 1, kindDir: 1}
	if got := count(root); len(got) != len(want) || len(root) != 7 {
		t.Fatalf("root view kinds %v (%d entries), want %v", got, len(root), want)
	}
	for k, n := range want {
		if count(root)[k] != n {
			t.Errorf("root view: %d of kind %d, want %d", count(root)[k], k, n)
		}
	}
	sub, err := r.v.List("d")
	if err != nil {
		t.Fatal(err)
	}
	if len(sub) != 1 || sub[0].Kind != kindDirID {
		t.Fatalf("empty dir view: %+v", sub)
	}
	// Every listed name is found again by lookup.
	for _, e := range root {
		got, err := r.v.Lookup("", e.Name)
		if err != nil || got.Kind != e.Kind || got.Rel != e.Rel {
			t.Errorf("lookup(%q) = %+v, %v; listed as %+v", e.Name, got, err, e)
		}
	}
}
