package vault

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReadDirDamagedEntry: an entry whose name decrypts but which cannot
// be described (a symlink whose backing target was replaced, a file cut to
// an impossible size) does not hide its siblings: ReadDir lists the others
// and names the damaged ones in a *BadEntriesError, so that ls and export
// go on past them. Found by TestHostileCiphertext (internal/cli).
func TestReadDirDamagedEntry(t *testing.T) {
	v, dir := newTestVault(t)
	if err := v.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"d/a", "d/z"} {
		if err := v.WriteFile(f, []byte("intact "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Symlink("target", "d/link"); err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile("d/cut", make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	link, err := v.EncryptPath("d/link")
	if err != nil {
		t.Fatal(err)
	}
	cut, err := v.EncryptPath("d/cut")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, link))
	if err := os.Symlink("/dev/zero", filepath.Join(dir, link)); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, cut), 40); err != nil { // header and 4 bytes: no chunk fits
		t.Fatal(err)
	}

	ents, err := v.ReadDir("d")
	var bad *BadEntriesError
	if !errors.As(err, &bad) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadDir: %v, want a *BadEntriesError", err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != "a" || names[1] != "z" {
		t.Errorf("ReadDir listed %q, want [a z]", names)
	}
	failed := map[string]bool{}
	for _, f := range bad.Failed {
		failed[f.Name] = true
	}
	if len(bad.Failed) != 2 || !failed["link"] || !failed["cut"] {
		t.Errorf("Failed = %v, want link and cut", bad.Failed)
	}
}
