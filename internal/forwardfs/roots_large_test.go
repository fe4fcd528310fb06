package forwardfs_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestLargeFileRootsMounted: a file of four tag groups written through
// the mount whole (its backing file as long as it has bytes allocated:
// the engine loads its tag blocks without seeking) or as a hole of three
// whole groups and a tail (its hole groups skipped by seeking) reads back
// when the engine opens it anew, and reads EIO once an entry of its last
// tag block is changed on the backing store.
func TestLargeFileRootsMounted(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		name := "dense"
		if sparse {
			name = "sparse"
		}
		t.Run(name, func(t *testing.T) {
			v := mounttest.NewRootsVault(t, nil)
			suite := v.Mounted.Engine().Suite()
			group := int64(256 * suite.ChunkSize())
			size := 3*group + 100
			want := bytes.Repeat([]byte("0123456789abcdef"), int(size/16+1))[:size]
			if sparse {
				clear(want[:size-100])
			}
			f := filepath.Join(v.Mnt, "big")
			w, err := os.Create(f)
			must(t, err)
			if sparse {
				must(t, w.Truncate(size-100))
				_, err = w.WriteAt(want[size-100:], size-100)
			} else {
				_, err = w.Write(want)
			}
			must(t, err)
			must(t, w.Close())
			backed := mounttest.BackingFiles(t, v.Cipher)
			if len(backed) != 1 {
				t.Fatalf("backing files %v, want one", backed)
			}
			waitReleased(t, v, backed[0])
			var st unix.Stat_t
			must(t, unix.Stat(backed[0], &st))
			if dense := st.Blocks*512 >= st.Size; dense == sparse {
				t.Fatalf("backing file of %d bytes has %d allocated: want dense %v", st.Size, st.Blocks*512, !sparse)
			}
			got, err := os.ReadFile(f)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("read back: %v (%d bytes, want %d)", err, len(got), size)
			}
			waitReleased(t, v, backed[0])

			b, err := os.OpenFile(backed[0], os.O_RDWR, 0)
			must(t, err)
			entry := suite.TagBlockOffset(3) + 2 // chunk 768's entry, the file's last
			one := make([]byte, 1)
			_, err = b.ReadAt(one, entry)
			must(t, err)
			one[0] ^= 0x10
			_, err = b.WriteAt(one, entry)
			must(t, err)
			must(t, b.Close())
			dropCached(t, f)
			if _, err := os.ReadFile(f); !errors.Is(err, unix.EIO) {
				t.Fatalf("read with an entry of tag block 3 changed: %v, want EIO", err)
			}
		})
	}
}

// dropCached drops the kernel's cached pages of f (as dd iflag=nocache
// does), so that the next read reaches the daemon.
func dropCached(t *testing.T, f string) {
	t.Helper()
	r, err := os.Open(f)
	must(t, err)
	defer r.Close()
	must(t, unix.Fadvise(int(r.Fd()), 0, 0, unix.FADV_DONTNEED))
}
