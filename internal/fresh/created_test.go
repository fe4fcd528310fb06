package fresh_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	fr "github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/sys/unix"
)

// TestCreatedRecordedUnread: a batch records the files this device
// created in its window from what the engine told (their last header, no
// xattrs) without reading them back. Differential: after a batch, every
// record of the device must be exactly what the disk holds, for files
// created through the mount and then written, left empty, truncated,
// given xattrs (and had them removed), renamed, renamed over another,
// linked, removed and created again, reopened and appended; and the
// batch must have spared the read-back for some of them (else the test
// proves nothing about that path). The same for directories made through
// the mount: nested, given an xattr, moved, removed.
func TestCreatedRecordedUnread(t *testing.T) {
	must := mustFor(t)
	for _, roots := range []bool{false, true} {
		t.Run(fmt.Sprintf("roots=%v", roots), func(t *testing.T) {
			dir, state := newVaultWith(t, session.Options{BoundVaultID: vaultID, FileRoots: roots})
			o := options(state, false)
			o.FileRoots = roots
			mnt, s, unmount := mountWith(t, dir, o)
			p := func(n string) string { return filepath.Join(mnt, n) }
			must(os.Mkdir(p("d"), 0o755))
			must(os.WriteFile(p("kept"), []byte("before"), 0o644))
			must(s.Freshness().Flush())

			for i, size := range []int{0, 1, 4095, 4096, 5000, 70000, 200000} {
				must(os.WriteFile(p(fmt.Sprintf("d/f%d", i)), bytes.Repeat([]byte{byte(i + 1)}, size), 0o644))
			}
			f, err := os.Create(p("empty"))
			must(err)
			must(f.Close())
			must(os.WriteFile(p("xattr"), []byte("with an xattr"), 0o644))
			must(unix.Setxattr(p("xattr"), "user.tag", []byte("v"), 0))
			must(os.WriteFile(p("xattr-gone"), []byte("xattr set and removed"), 0o644))
			must(unix.Setxattr(p("xattr-gone"), "user.tag", []byte("v"), 0))
			must(unix.Removexattr(p("xattr-gone"), "user.tag"))
			must(os.WriteFile(p("cut"), bytes.Repeat([]byte("c"), 9000), 0o644))
			must(os.Truncate(p("cut"), 10))
			must(os.WriteFile(p("zeroed"), []byte("to be emptied"), 0o644))
			must(os.Truncate(p("zeroed"), 0))
			must(os.WriteFile(p("from"), []byte("renamed"), 0o644))
			must(os.Rename(p("from"), p("d/to")))
			must(os.WriteFile(p("over"), []byte("renamed over kept"), 0o644))
			must(os.Rename(p("over"), p("kept")))
			must(os.WriteFile(p("linked"), []byte("linked"), 0o644))
			must(os.Link(p("linked"), p("d/link")))
			must(os.WriteFile(p("again"), []byte("first"), 0o644))
			must(os.Remove(p("again")))
			must(os.WriteFile(p("again"), []byte("second, longer"), 0o644))
			must(os.WriteFile(p("gone"), []byte("removed"), 0o644))
			must(os.Remove(p("gone")))
			must(os.WriteFile(p("appended"), []byte("one"), 0o644))
			a, err := os.OpenFile(p("appended"), os.O_WRONLY|os.O_APPEND, 0)
			must(err)
			_, err = a.WriteString(" two")
			must(err)
			must(a.Close())
			must(os.Symlink("target", p("sym")))
			must(os.Mkdir(p("d/sub"), 0o700))

			before := fr.Trusted(s.Freshness())
			must(s.Freshness().Flush())
			if n := fr.Trusted(s.Freshness()) - before; n < 10 {
				t.Errorf("the batch recorded %d created files unread, want at least the 10 only written", n)
			}
			bad, err := fr.Inexact(s.Freshness())
			must(err)
			if len(bad) > 0 {
				t.Errorf("records that are not what the disk holds:\n%v", bad)
			}

			// Directories made in a window: recorded unread, but for the
			// one given an xattr (read back, its digest recorded) and the
			// one removed; a moved one at its new name.
			must(os.MkdirAll(p("nd/inner/deeper"), 0o755))
			must(os.Mkdir(p("xdir"), 0o755))
			must(unix.Setxattr(p("xdir"), "user.tag", []byte("v"), 0))
			must(os.Mkdir(p("moved"), 0o755))
			must(os.Rename(p("moved"), p("d/moved-to")))
			must(os.Mkdir(p("rmd"), 0o755))
			must(os.Remove(p("rmd")))
			before = fr.Trusted(s.Freshness())
			must(s.Freshness().Flush())
			if n := fr.Trusted(s.Freshness()) - before; n != 4 {
				t.Errorf("the batch recorded %d directories unread, want 4 (nd, nd/inner, nd/inner/deeper, d/moved-to)", n)
			}
			bad, err = fr.Inexact(s.Freshness())
			must(err)
			if len(bad) > 0 {
				t.Errorf("records of directories that are not what the disk holds:\n%v", bad)
			}

			must(unmount())
			o.Freshness.Offline = true
			if rep := statusWith(t, dir, o); rep.Status != fr.OK {
				t.Fatalf("status after the unmount:\n%s", rep)
			}
		})
	}
}
