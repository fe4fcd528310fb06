package fresh_test

import (
	"os"
	"path/filepath"
	"testing"

	fr "github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/session"
)

// TestBatchSkipsGoneDirs: a directory removed through the mount while a
// batch that took names of it runs is not looked for by a walk of the
// whole tree (rm -rf of a tree made the batches walk what was left of
// it, a directory open, listing and stat of every entry each time), and
// every record of the device is exact after the next batch.
func TestBatchSkipsGoneDirs(t *testing.T) {
	must := mustFor(t)
	dir, state := newVaultWith(t, session.Options{BoundVaultID: vaultID})
	mnt, s, unmount := mountWith(t, dir, options(state, false))
	p := func(n string) string { return filepath.Join(mnt, n) }
	must(os.MkdirAll(p("a/b"), 0o755))
	for _, n := range []string{"a/b/f", "a/b/g", "a/h"} {
		must(os.WriteFile(p(n), []byte(n), 0o644))
	}
	v := s.Freshness()
	must(v.Flush())
	walks := fr.Walks(v)
	must(os.Remove(p("a/b/f"))) // noted in b
	must(fr.BatchAround(v, func() { must(os.RemoveAll(p("a/b"))) }))
	if n := fr.Walks(v) - walks; n != 0 {
		t.Fatalf("the batch walked the tree %d times for a directory removed while it ran", n)
	}
	must(v.Flush())
	inexact, err := fr.Inexact(v)
	must(err)
	if len(inexact) != 0 {
		t.Fatalf("records that are not what the disk holds: %q", inexact)
	}
	must(unmount())
}
