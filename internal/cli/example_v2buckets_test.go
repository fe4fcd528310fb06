package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// TestExampleVaultV2BucketsCLI: the committed example of the full format
// 2 with its freshness manifests in buckets
// (testdata/example-vaults/v2-buckets-aes-256-gcm: v2-full after
// `encryptfs upgrade`) is clean for fsck and for freshness status with a
// new local state, reads through cat and through a mount on the test's
// transport, is up to date for upgrade, and a mount's writes land in
// buckets with status clean after.
func TestExampleVaultV2BucketsCLI(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, pf := copyFullExample(t, "v2-buckets-aes-256-gcm")
	wantFlags(t, dir, "CompactRoots", "FileRoots", "KeyEpochs", "Freshness", "ManifestBuckets")
	before := len(manifestBuckets(t, dir))

	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
	state := filepath.Join(t.TempDir(), "state")
	r := run(t, "", "freshness", "status", "--passfile", pf, "--state-dir", state, dir)
	r.want(t, 0)
	if strings.Contains(r.stdout, "nothing recorded yet") || !strings.Contains(r.stdout, "OK") {
		t.Fatalf("freshness status of the example:\n%s", r.stdout)
	}
	r = run(t, "", "cat", "--passfile", pf, dir, "links/c")
	if r.want(t, 0); r.stdout != "one file, four names\n" {
		t.Fatalf("cat links/c: %q", r.stdout)
	}
	// Made before trimmed leaves: upgrade adds them (the config only),
	// and is then up to date. Its files keep their roots (read below).
	if r = run(t, "", "upgrade", "--passfile", pf, dir); !strings.Contains(r.stdout, "Turned on trimmed leaves") {
		t.Fatalf("upgrade of the example said:\n%s", r.stdout)
	}
	wantFlags(t, dir, "CompactRoots", "FileRoots", "KeyEpochs", "Freshness", "ManifestBuckets", "TrimmedLeaves")
	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
	if r = run(t, "", "upgrade", "--passfile", pf, dir); !strings.Contains(r.stdout, "up to date") {
		t.Fatalf("the second upgrade of the example said:\n%s", r.stdout)
	}

	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", pf, "-o", "state_dir="+state, dir, mnt).want(t, 0)
	got, err := os.ReadFile(filepath.Join(mnt, "epoch1", "new.txt"))
	must(t, err)
	if string(got) != "written at epoch 1\n" {
		t.Fatalf("epoch1/new.txt through the mount: %q", got)
	}
	must(t, os.MkdirAll(filepath.Join(mnt, "a", "b", "c"), 0o755))
	must(t, os.WriteFile(filepath.Join(mnt, "a", "b", "c", "new"), []byte("new"), 0o644))
	must(t, os.Remove(filepath.Join(mnt, "hello.txt")))
	run(t, "", "unmount", mnt).want(t, 0)
	// status waits for the mount's last batch (its state lock).
	r = run(t, "", "freshness", "status", "--passfile", pf, "--state-dir", state, dir)
	if r.want(t, 0); !strings.Contains(r.stdout, "OK") {
		t.Fatalf("freshness status after the mount:\n%s", r.stdout)
	}
	// The mount is a device of its own (the state's): its manifests are
	// in buckets of its own, beside the example's device's.
	if after := len(manifestBuckets(t, dir)); after <= before {
		t.Fatalf("buckets: %d before the mount, %d after", before, after)
	}
}
