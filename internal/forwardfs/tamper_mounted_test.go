package forwardfs_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestTamperWhileMounted: a file written through the mount, then changed
// on the backing store while the mount stays up, reads EIO, as after a
// remount (TestTamper): a changed entry, a changed chunk, and an older
// version's chunk put back with its entry (each authentic on its own)
// must all fail. On a vault whose roots hash whole tag blocks
// (ENCRYPTFS_TEST_ROOTS=fileroots) the engine remembers the roots of the
// small files it wrote (fileengine.rootMemo) and checks a later open by
// comparing the stored tag entries with them instead of hashing; with
// trimmed leaves (init's, ENCRYPTFS_TEST_ROOTS=1) it hashes them.
func TestTamperWhileMounted(t *testing.T) {
	for _, c := range []struct {
		name string
		// chunk1 is the last chunk: it runs to the end of the file.
		tamper func(stored, older []byte, chunk1, entry1 int64)
	}{
		{"entry", func(s, _ []byte, _, entry1 int64) { s[entry1+3] ^= 0x10 }},
		{"chunk", func(s, _ []byte, chunk1, _ int64) { s[chunk1+40] ^= 0x10 }},
		{"older-chunk-and-entry", func(s, older []byte, chunk1, entry1 int64) {
			copy(s[chunk1:], older[chunk1:])
			copy(s[entry1:entry1+16], older[entry1:])
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := mounttest.NewRootsVault(t, nil)
			suite := v.Mounted.Engine().Suite()
			size := suite.ChunkSize() + 100 // two chunks: piece A of the tag block is stored
			f := filepath.Join(v.Mnt, "f")
			must(t, os.WriteFile(f, bytes.Repeat([]byte("o"), size), 0o644))
			readBackWhole(t, f, 'o')
			backed := mounttest.BackingFiles(t, v.Cipher)
			if len(backed) != 1 {
				t.Fatalf("backing files %v, want one", backed)
			}
			older, err := os.ReadFile(backed[0])
			must(t, err)
			// Written, so remembered at its close; not read since, so the
			// next open (the file's only handle) drops the kernel's cached
			// pages (forwardfs keepCache) and the read reaches the daemon.
			must(t, os.WriteFile(f, bytes.Repeat([]byte("n"), size), 0o644))
			waitReleased(t, v, backed[0])

			stored, err := os.ReadFile(backed[0])
			must(t, err)
			c.tamper(stored, older, suite.ChunkOffset(1), suite.EntryOffset(1))
			must(t, os.WriteFile(backed[0], stored, 0o644))
			if _, err := os.ReadFile(f); !errors.Is(err, unix.EIO) {
				t.Fatalf("read of a file changed under the mount: %v, want EIO", err)
			}
		})
	}
}

// readBackWhole reads f and checks every byte is b.
func readBackWhole(t *testing.T, f string, b byte) {
	t.Helper()
	got, err := os.ReadFile(f)
	must(t, err)
	if len(bytes.Trim(got, string(b))) != 0 {
		t.Fatalf("%s does not read back", f)
	}
}

// waitReleased waits until the engine holds no File of the backing file
// p (FUSE's RELEASE of the last close arrives after close(2) returned),
// so that the next open opens it anew and checks it.
func waitReleased(t *testing.T, v *mounttest.Vault, p string) {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Stat(p, &st))
	key := engine.FileKey{Dev: st.Dev, Ino: st.Ino}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		f, open := v.Mounted.Vault().Lookup(key)
		if !open {
			return
		}
		must(t, f.Release())
		if time.Now().After(deadline) {
			t.Fatal("the engine still holds the file 10 s after its last close")
		}
	}
}
