package forwardfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestFirstWriteOnDisk: through the mount, a new small file's first write
// is in its backing file when write(2) returns, whole (the engine makes it
// clean in one backing write: internal/fileengine/held.go), not when the
// file settles: the mount answers no FLUSH, so that is the last RELEASE,
// which the kernel sends after close(2) has returned; a sync tool or a
// backup reading CIPHERDIR right after the close once found the file
// empty (CI: TestSyncConflictCopy). A copy of the backing file taken while
// the writer still has it open, put beside it as a sync tool's conflict
// copy, reads back what was written; so does a file with an xattr set
// between two writes. Fails if the write is held past the request.
func TestFirstWriteOnDisk(t *testing.T) {
	v := mounttest.NewRootsVault(t, nil)
	data := bytes.Repeat([]byte("held "), 600) // 3000 bytes: one chunk
	p := filepath.Join(v.Mnt, "small")
	f, err := os.Create(p)
	must(t, err)
	defer f.Close()
	_, err = f.Write(data)
	must(t, err)

	backing := mounttest.BackingFiles(t, v.Cipher)
	if len(backing) != 1 {
		t.Fatalf("%d backing entries, want 1", len(backing))
	}
	stored, err := os.ReadFile(backing[0])
	must(t, err)
	must(t, os.WriteFile(backing[0]+" (1)", stored, 0o644))
	if got, err := os.ReadFile(p + " (1)"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("copy of the backing file taken while open: %d bytes, %v; want %d", len(got), err, len(data))
	}

	// A second file: an xattr set between two writes.
	q := filepath.Join(v.Mnt, "tagged")
	g, err := os.Create(q)
	must(t, err)
	defer g.Close()
	_, err = g.Write(data[:100])
	must(t, err)
	must(t, unix.Setxattr(q, "user.note", []byte("kept"), 0))
	_, err = g.Write(data[100:200])
	must(t, err)

	must(t, f.Close())
	must(t, g.Close())
	v.Remount(t)
	for name, want := range map[string][]byte{"small": data, "small (1)": data, "tagged": data[:200]} {
		got, err := os.ReadFile(filepath.Join(v.Mnt, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after a remount: %d bytes, %v; want %d", name, len(got), err, len(want))
		}
	}
	buf := make([]byte, 16)
	if n, err := unix.Getxattr(q, "user.note", buf); err != nil || string(buf[:n]) != "kept" {
		t.Fatalf("xattr after a remount: %q, %v", buf[:n], err)
	}
	if out := v.Log.String(); out != "" {
		t.Fatalf("the daemon logged: %s", out)
	}
}
