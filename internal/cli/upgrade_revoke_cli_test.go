package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// TestUpgradeAfterRevokeCLI (issue 18, M5): a vault made with some
// features off, revoked (passwd --revoke), then upgraded. Before the fix
// the upgrade refused the vault (exit 11, adding file roots) or left it
// unopenable (exit 5, adding freshness: the older epoch keys stayed
// sealed under the old Params). Now: the upgrade succeeds, the new
// password mounts it, and what was written before the revoke and after it
// (a directory of the new epoch, a hard link, a multi-chunk file) reads
// the same; data written after the upgrade reads too, and fsck is clean.
func TestUpgradeAfterRevokeCLI(t *testing.T) {
	fstest.RequireFUSE(t)
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"no roots, no freshness", []string{"--file-roots=false", "--freshness=false"}},
		{"no freshness", []string{"--freshness=false"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Each vault's freshness state of its own (the default
			// vault records on mount).
			t.Setenv("XDG_STATE_HOME", t.TempDir())
			pf, npf := writePassfile(t, "old"), writePassfile(t, "new")
			dir, _ := newVault(t, "old", append([]string{"--format", "2"}, c.flags...)...)
			mnt := t.TempDir()
			cleanupMount(t, mnt)
			run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
			must(t, os.MkdirAll(filepath.Join(mnt, "olddir"), 0o755))
			must(t, os.WriteFile(filepath.Join(mnt, "olddir/old.txt"), []byte("before the revoke"), 0o644))
			run(t, "", "unmount", mnt).want(t, 0)

			run(t, "", "key", "remove", "--passfile", pf, dir, "2").want(t, 0) // the recovery slot
			r := run(t, "", append([]string{"passwd", "--revoke", "--passfile", pf, "--new-passfile", npf, dir}, cheapKDF...)...)
			r.want(t, 0)
			if !strings.Contains(r.stdout, "key epoch 1") {
				t.Fatalf("passwd --revoke: %s", r.stdout)
			}
			run(t, "", "mount", "--passfile", npf, dir, mnt).want(t, 0)
			must(t, os.MkdirAll(filepath.Join(mnt, "newdir"), 0o755))
			must(t, os.WriteFile(filepath.Join(mnt, "newdir/big"), bytes.Repeat([]byte("after the revoke "), 3000), 0o644))
			must(t, os.WriteFile(filepath.Join(mnt, "olddir/new.txt"), []byte("after, in an old directory"), 0o644))
			must(t, os.Link(filepath.Join(mnt, "newdir/big"), filepath.Join(mnt, "olddir/big-too")))
			want := readMountTree(t, mnt)
			run(t, "", "unmount", mnt).want(t, 0)

			run(t, "", "upgrade", "--passfile", npf, dir).want(t, 0)
			wantFlags(t, dir, "BoundLocations", "KeyEpochs", "FileRoots", "Freshness")
			run(t, "", "upgrade", "--passfile", npf, dir).want(t, 0) // up to date

			run(t, "", "mount", "--passfile", npf, dir, mnt).want(t, 0)
			got := readMountTree(t, mnt)
			must(t, os.WriteFile(filepath.Join(mnt, "newdir/later"), []byte("after the upgrade"), 0o644))
			run(t, "", "unmount", mnt).want(t, 0)
			sameMountTree(t, "the vault upgraded after a revoke", got, want)
			r = run(t, "", "cat", "--passfile", npf, dir, "newdir/later")
			r.want(t, 0)
			if r.stdout != "after the upgrade" {
				t.Fatalf("cat newdir/later: %q", r.stdout)
			}
			run(t, "", "fsck", "--passfile", npf, dir).want(t, 0)
			run(t, "", "cat", "--passfile", pf, dir, "olddir/old.txt").want(t, ExitWrongPassword)
		})
	}
}
