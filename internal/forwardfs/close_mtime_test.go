package forwardfs_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
)

// TestCloseKeepsMtime: with file roots the clean header is written
// when the file is released (docs/format.md §16). GNU tar sets a file's
// times before it closes it, and RELEASE is asynchronous, so a utimensat
// right after close(2) may be answered before it too. The header write
// must not undo the time set (it did: rsync -an after an untar found most
// files changed): Setattr settles the open file (fileengine.File.Settle) before
// it sets times.
//
// The same holds for the space a growing file reserved ahead (core's
// reserve-ahead, given back at close: a punch, which moves the mtime),
// on every format: files over 1 MiB came out of an untar with the time
// of their close.
func TestCloseKeepsMtime(t *testing.T) {
	t.Run("roots", func(t *testing.T) { closeKeepsMtime(t, mounttest.NewRootsVault(t, nil), []byte("contents")) })
	big := bytes.Repeat([]byte("reserve ahead "), 200_000) // 2.8 MB: reserved ahead while it grows
	t.Run("v1-reserve", func(t *testing.T) { closeKeepsMtime(t, mounttest.NewVault(t, nil), big) })
	t.Run("roots-reserve", func(t *testing.T) { closeKeepsMtime(t, mounttest.NewRootsVault(t, nil), big) })
}

func closeKeepsMtime(t *testing.T, v *mounttest.Vault, data []byte) {
	want := time.Date(2020, 2, 29, 12, 0, 0, 123456789, time.UTC)
	n := 200
	if len(data) > 1<<20 {
		n = 6
	}
	for i := range n {
		p := filepath.Join(v.Mnt, fmt.Sprintf("f%03d", i))
		if i%2 == 0 { // as tar does: the times, then close
			f, err := os.Create(p)
			must(t, err)
			for off := 0; off < len(data); off += 128 << 10 { // tar's write size
				_, err = f.Write(data[off:min(off+128<<10, len(data))])
				must(t, err)
			}
			must(t, err)
			must(t, os.Chtimes(p, want, want))
			must(t, f.Close())
		} else { // close, then the times
			must(t, os.WriteFile(p, data, 0o644))
			must(t, os.Chtimes(p, want, want))
		}
	}
	// Every RELEASE has come by the time the mount is gone.
	v.Remount(t)
	for i := range n {
		p := filepath.Join(v.Mnt, fmt.Sprintf("f%03d", i))
		st, err := os.Stat(p)
		must(t, err)
		if !st.ModTime().Equal(want) {
			t.Fatalf("%s: mtime %v after close and utimensat, want %v", p, st.ModTime(), want)
		}
	}
}
