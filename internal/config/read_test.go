package config

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
)

// TestLoadPlanted: whatever is planted as encryptfs.conf that is not a
// regular file of at most MaxFileSize bytes is refused at once as corrupt:
// no symlink is followed (not even to a valid config), a FIFO does not
// block, /dev/zero is not read.
func TestLoadPlanted(t *testing.T) {
	_, _, data := newTestConfig(t, "aes-256-gcm", false)
	real := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(real, data, 0o400); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, want string
		plant      func(path string) error
	}{
		{"symlink to a config", "not a regular file (it is a symlink)", func(p string) error { return os.Symlink(real, p) }},
		{"symlink to /dev/zero", "not a regular file (it is a symlink)", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"FIFO", "not a regular file (it is a FIFO)", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"directory", "not a regular file (it is a directory)", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"oversized", "too large", func(p string) error { return os.WriteFile(p, bytes.Repeat([]byte(" "), MaxFileSize+1), 0o600) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tt.plant(filepath.Join(dir, FileName)); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := Load(dir); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Load: %v, want ErrCorrupt %q", err, tt.want)
				}
			case <-time.After(10 * time.Second):
				// Unblock the open so the goroutine ends.
				if f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_WRONLY, 0); err == nil {
					f.Close()
				}
				t.Fatal("Load hung")
			}
		})
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load of an empty dir: %v", err)
	}
}

// TestSaveOverPlantedSymlink: Save replaces a symlink planted as
// encryptfs.conf; it never writes through it.
func TestSaveOverPlantedSymlink(t *testing.T) {
	c, _, _ := newTestConfig(t, "aes-256-gcm", false)
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatal("Save wrote through the planted symlink")
	}
	if _, err := Load(dir); err != nil {
		t.Fatalf("Load after Save: %v", err)
	}
}

// TestKDFMemoryLimit: Unlock and Rewrap refuse a memory cost above the
// limit before running Argon2id.
func TestKDFMemoryLimit(t *testing.T) {
	k, err := kdf.New(rand.Reader, 1, 16<<10, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, master, err := Create(NewParams("aes-256-gcm", 4096, k), testPassword, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c.LimitKDFMemory(8 << 10)
	if _, err := c.Unlock(testPassword); !errors.Is(err, ErrKDFMemory) {
		t.Fatalf("Unlock over the limit: %v", err)
	}
	if err := c.Rewrap(master, testPassword, k, rand.Reader); !errors.Is(err, ErrKDFMemory) {
		t.Fatalf("Rewrap over the limit: %v", err)
	}
	c.LimitKDFMemory(16 << 10)
	if _, err := c.Unlock(testPassword); err != nil {
		t.Fatalf("Unlock at the limit: %v", err)
	}
}
