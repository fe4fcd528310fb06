package mounttest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMapShared: the child maps the file shared and reads what the file
// holds at each moment (a write after the mapping shows through it), and
// a file that cannot be mapped gives the mmap's errno.
func TestMapShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abcd"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := MapShared(t, path, 4)
	if err != nil {
		t.Fatal(err)
	}
	if b := m.Byte(2); b != 'c' {
		t.Fatalf("byte 2: %q, want 'c'", b)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("X"), 2); err != nil {
		t.Fatal(err)
	}
	if b := m.Byte(2); b != 'X' {
		t.Fatalf("byte 2 after a write: %q, want 'X'", b)
	}
	m.Close()
	m.Close()

	// procfs files refuse mmap with ENODEV, as a direct_io FUSE handle
	// refuses a shared one.
	if _, err := MapShared(t, "/proc/self/status", 4096); !errors.Is(err, unix.ENODEV) {
		t.Fatalf("mapping /proc/self/status: %v, want ENODEV", err)
	}
	if _, err := MapShared(t, filepath.Join(t.TempDir(), "missing"), 4); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("mapping a missing file: %v, want ENOENT", err)
	}
}
