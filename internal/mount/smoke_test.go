package mount

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSmoke(t *testing.T) {
	v := newVault(t, nil)
	p := filepath.Join(v.mnt, "hello.txt")
	if err := os.WriteFile(p, []byte("hello world"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "hello world" {
		t.Fatalf("read %q %v", b, err)
	}
	if err := os.MkdirAll(filepath.Join(v.mnt, "a/b/c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.mnt, "a/b/c/f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(v.mnt, "a/b/c"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("readdir %v %v", ents, err)
	}
	t.Log(v.log.String())
}
