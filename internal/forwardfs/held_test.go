package forwardfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestHeldFirstWrite: through the mount, a new small file's first write is
// held until the file settles (internal/fileengine/held.go): its backing
// file stays empty while the writer has it open, yet every user of the
// mount sees what was written: a stat, a reader opened beside the writer,
// an xattr set on it. After the close the backing file holds the clean
// file, and a remount reads it back with its xattr. Fails if the write is
// made at once (the backing file is not empty), or if a reader or the
// xattr finds the held bytes missing.
func TestHeldFirstWrite(t *testing.T) {
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
	if st, err := os.Stat(backing[0]); err != nil || st.Size() != 0 {
		t.Fatalf("backing file while the first write is held: %v, %v; want 0 bytes", st, err)
	}
	if st, err := os.Stat(p); err != nil || st.Size() != int64(len(data)) {
		t.Fatalf("stat while held: %v, %v; want %d bytes", st, err, len(data))
	}
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("reader beside the writer: %d bytes, %v", len(got), err)
	}

	// A second file: an xattr set while its first write is held.
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
	for name, want := range map[string][]byte{"small": data, "tagged": data[:200]} {
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
