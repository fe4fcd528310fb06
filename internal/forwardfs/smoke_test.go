package forwardfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
)

func TestSmoke(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	p := filepath.Join(v.Mnt, "hello.txt")
	if err := os.WriteFile(p, []byte("hello world"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "hello world" {
		t.Fatalf("read %q %v", b, err)
	}
	if err := os.MkdirAll(filepath.Join(v.Mnt, "a/b/c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.Mnt, "a/b/c/f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(v.Mnt, "a/b/c"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("readdir %v %v", ents, err)
	}
	t.Log(v.Log.String())
}
