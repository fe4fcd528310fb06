package vault

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriterRefusedOnReadOnlyShare: a reader that could open the backing
// file only read-only holds the inode's engine file; a writer cannot share
// it and gets ETXTBSY (fileengine.ErrBusy underneath), while another reader can.
func TestWriterRefusedOnReadOnlyShare(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: one thread opens the file under another file system uid")
	}
	v, dir := newTestVault(t)
	// Let nobody look the file up: the vault directory and the root's ID.
	for name, mode := range map[string]os.FileMode{dir: 0o755, filepath.Join(dir, "encryptfs.dirid"): 0o444} {
		if err := os.Chmod(name, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.WriteFile("f", []byte("data"), 0o444); err != nil {
		t.Fatal(err)
	}
	// Open under fsuid nobody on a locked thread, so that the backing
	// open O_RDWR fails with EACCES and the reader falls back to O_RDONLY.
	// The thread is never unlocked: it ends with the goroutine.
	type result struct {
		f   *File
		err error
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread()
		unix.Setfsuid(65534)
		f, err := v.Open("f")
		done <- result{f, err}
	}()
	res := <-done
	if res.err != nil {
		t.Fatalf("read-only open as nobody: %v", res.err)
	}
	defer res.f.Close()
	if _, err := v.OpenFile("f", os.O_RDWR, 0); !errors.Is(err, unix.ETXTBSY) {
		t.Fatalf("writer sharing a read-only engine file: %v, want ETXTBSY", err)
	}
	r, err := v.Open("f")
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	r.Close()
}
