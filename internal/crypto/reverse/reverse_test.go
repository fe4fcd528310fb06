package reverse

import (
	"bytes"
	"errors"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

func testDeriver(t *testing.T, fill byte) *Deriver {
	t.Helper()
	d, err := New(bytes.Repeat([]byte{fill}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNewKeySize(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := New(make([]byte, n)); !errors.Is(err, ErrKeySize) {
			t.Errorf("New(%d bytes) = %v, want ErrKeySize", n, err)
		}
	}
}

func TestNewCopiesKey(t *testing.T) {
	key := bytes.Repeat([]byte{1}, KeySize)
	d, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	before := d.DirID("x")
	clear(key)
	if !bytes.Equal(before, d.DirID("x")) {
		t.Fatal("deriver depends on the caller's key slice")
	}
}

func TestCheckPath(t *testing.T) {
	for _, tc := range []struct {
		rel string
		ok  bool
	}{
		{"", true}, {"a", true}, {"a/b", true}, {"a b/.c/..d", true},
		{"/a", false}, {"a/", false}, {"a//b", false}, {".", false}, {"a/..", false}, {"a/./b", false}, {"a\x00b", false},
	} {
		err := CheckPath(tc.rel)
		if (err == nil) != tc.ok {
			t.Errorf("CheckPath(%q) = %v, want ok=%v", tc.rel, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrPath) {
			t.Errorf("CheckPath(%q) = %v, want ErrPath", tc.rel, err)
		}
	}
}

// TestDeterministicAndDistinct: every derivation is a function of its
// inputs only, and changing any input (or the key) changes the output.
func TestDeterministicAndDistinct(t *testing.T) {
	d1, d1b, d2 := testDeriver(t, 1), testDeriver(t, 1), testDeriver(t, 2)
	id := d1.FileID("a/f")
	outputs := map[string]string{}
	add := func(what string, b []byte) {
		t.Helper()
		if prev, ok := outputs[string(b)]; ok {
			t.Errorf("%s and %s derive the same bytes %x", prev, what, b)
		}
		outputs[string(b)] = what
	}
	for _, tc := range []struct {
		what string
		f    func(d *Deriver) []byte
		size int
	}{
		{"DirID root", func(d *Deriver) []byte { return d.DirID("") }, DirIDSize},
		{"DirID a", func(d *Deriver) []byte { return d.DirID("a") }, DirIDSize},
		{"DirID a/b", func(d *Deriver) []byte { return d.DirID("a/b") }, DirIDSize},
		{"FileID a", func(d *Deriver) []byte { f := d.FileID("a"); return f[:] }, content.FileIDSize},
		{"FileID a/f", func(d *Deriver) []byte { f := d.FileID("a/f"); return f[:] }, content.FileIDSize},
		{"nonce 0", func(d *Deriver) []byte { return d.ChunkNonce(id, 0) }, ChunkNonceSize},
		{"nonce 1", func(d *Deriver) []byte { return d.ChunkNonce(id, 1) }, ChunkNonceSize},
		{"nonce 1<<32", func(d *Deriver) []byte { return d.ChunkNonce(id, 1<<32) }, ChunkNonceSize},
		{"nonce other file", func(d *Deriver) []byte { return d.ChunkNonce(d.FileID("a/g"), 0) }, ChunkNonceSize},
		{"symlink", func(d *Deriver) []byte { return d.SymlinkNonce(d.DirID(""), "l", "t") }, SymlinkNonceSize},
		{"symlink name/target split", func(d *Deriver) []byte { return d.SymlinkNonce(d.DirID(""), "lt", "") }, SymlinkNonceSize},
		{"symlink other target", func(d *Deriver) []byte { return d.SymlinkNonce(d.DirID(""), "l", "u") }, SymlinkNonceSize},
		{"symlink other dir", func(d *Deriver) []byte { return d.SymlinkNonce(d.DirID("a"), "l", "t") }, SymlinkNonceSize},
	} {
		got := tc.f(d1)
		if len(got) != tc.size {
			t.Errorf("%s: %d bytes, want %d", tc.what, len(got), tc.size)
		}
		if again := tc.f(d1b); !bytes.Equal(got, again) {
			t.Errorf("%s: not deterministic: %x vs %x", tc.what, got, again)
		}
		other := tc.f(d2)
		if bytes.Equal(got[:min(16, len(got))], other[:min(16, len(other))]) {
			t.Errorf("%s: same output under another key", tc.what)
		}
		add(tc.what, got[:16])
	}
	// The dirID and fileID of the same path are different values (labels).
	dir, file := d1.DirID("a"), d1.FileID("a")
	if bytes.Equal(dir, file[:]) {
		t.Error("DirID and FileID of one path are equal")
	}
}

func TestWipe(t *testing.T) {
	d := testDeriver(t, 7)
	before := d.DirID("")
	d.Wipe()
	if bytes.Equal(before, d.DirID("")) {
		t.Fatal("Wipe left the key in place")
	}
}
