package forwardfs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
)

// TestRootsCloseKeepsMtime: with file roots the clean header is written
// when the file is released (docs/format.md §16). GNU tar sets a file's
// times before it closes it, and RELEASE is asynchronous, so a utimensat
// right after close(2) may be answered before it too. The header write
// must not undo the time set (it did: rsync -an after an untar found most
// files changed).
func TestRootsCloseKeepsMtime(t *testing.T) {
	v := mounttest.NewRootsVault(t, nil)
	want := time.Date(2020, 2, 29, 12, 0, 0, 123456789, time.UTC)
	const n = 200
	for i := range n {
		p := filepath.Join(v.Mnt, fmt.Sprintf("f%03d", i))
		if i%2 == 0 { // as tar does: the times, then close
			f, err := os.Create(p)
			must(t, err)
			_, err = f.Write([]byte("contents"))
			must(t, err)
			must(t, os.Chtimes(p, want, want))
			must(t, f.Close())
		} else { // close, then the times
			must(t, os.WriteFile(p, []byte("contents"), 0o644))
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
