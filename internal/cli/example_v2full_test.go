package cli

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestExampleVaultV2FullCLI: on a copy of the committed example vault of
// the full format 2 (testdata/example-vaults/v2-full-aes-256-gcm, read by
// vault's TestExampleVaultV2Full), fsck is clean, freshness status with a
// new local state is clean, cat reads a file of each epoch. The example
// was made before CompactRoots: upgrade moves its files into the compact
// layout (epochs, a links file, freshness records: headers unchanged),
// after which fsck is clean, freshness status still OK, the files read
// the same, and a second upgrade says it is up to date.
func TestExampleVaultV2FullCLI(t *testing.T) {
	// The upgrade below records the example's VaultID with CompactRoots:
	// a state of its own, so that another copy of it is no rollback.
	dir, pf := copyFullExample(t, "v2-full-aes-256-gcm")

	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
	state := filepath.Join(t.TempDir(), "state")
	r := run(t, "", "freshness", "status", "--passfile", pf, "--state-dir", state, dir)
	r.want(t, 0)
	if strings.Contains(r.stdout, "nothing recorded yet") || !strings.Contains(r.stdout, "OK") {
		t.Fatalf("freshness status of the example:\n%s", r.stdout)
	}
	for name, want := range map[string]string{"hello.txt": "Hello, EncryptFS v1!\n", "epoch1/new.txt": "written at epoch 1\n"} {
		r = run(t, "", "cat", "--passfile", pf, dir, name)
		r.want(t, 0)
		if r.stdout != want {
			t.Fatalf("cat %s: %q", name, r.stdout)
		}
	}
	r = run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "into the compact layout") || !strings.Contains(r.stdout, "Packed 5 freshness manifests into buckets") {
		t.Fatalf("upgrade of the example said:\n%s", r.stdout)
	}
	wantFlags(t, dir, "CompactRoots", "FileRoots", "KeyEpochs", "Freshness", "ManifestBuckets")
	buckets := manifestBuckets(t, dir)
	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
	r = run(t, "", "freshness", "status", "--passfile", pf, "--state-dir", state, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "OK") {
		t.Fatalf("freshness status of the upgraded example:\n%s", r.stdout)
	}
	for name, want := range map[string]string{"hello.txt": "Hello, EncryptFS v1!\n", "epoch1/new.txt": "written at epoch 1\n", "links/c": "one file, four names\n"} {
		r = run(t, "", "cat", "--passfile", pf, dir, name)
		r.want(t, 0)
		if r.stdout != want {
			t.Fatalf("cat %s after the upgrade: %q", name, r.stdout)
		}
	}
	r = run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "up to date") {
		t.Fatalf("second upgrade of the example said:\n%s", r.stdout)
	}
	// A bucket deleted: the epoch commits to its manifests. The example's
	// device is not this state's, so a sync tool could be in the middle
	// of replacing it: behind.
	if err := os.Remove(buckets[0]); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "freshness", "status", "--passfile", pf, "--state-dir", state, dir)
	r.want(t, ExitFreshBehind)
	if !strings.Contains(r.stdout, "manifest deleted") {
		t.Fatalf("freshness status with a bucket deleted:\n%s", r.stdout)
	}
}

// manifestBuckets returns the bucket files of every device of the vault
// in dir, failing if a manifest file of the old layout is left beside
// them.
func manifestBuckets(t *testing.T, dir string) []string {
	t.Helper()
	mdirs, _ := filepath.Glob(filepath.Join(dir, "encryptfs.manifests.*"))
	var out []string
	for _, m := range mdirs {
		ents, err := os.ReadDir(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "bucket.") {
				t.Fatalf("%s in %s beside the buckets", e.Name(), m)
			}
			out = append(out, filepath.Join(m, e.Name()))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no bucket in %q", mdirs)
	}
	return out
}

// copyFullExample copies the committed example vault name (v2-full or
// one made from it) with its extras restored, under a freshness state
// root of the test's own; it returns the copy and the passfile of
// v2-full-credentials.
func copyFullExample(t *testing.T, name string) (dir, passfile string) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	examples := filepath.Join("..", "..", "testdata", "example-vaults")
	dir = filepath.Join(t.TempDir(), name)
	cpA(t, filepath.Join(examples, name), dir)
	restoreExtras(t, dir, filepath.Join(examples, name+".extras"))
	return dir, filepath.Join(examples, "v2-full-credentials", "password")
}

// restoreExtras applies the extras file of an example vault (what git
// does not keep: hard links and backing xattrs; see
// testdata/example-vaults/README.md) to its copy in dir.
func restoreExtras(t *testing.T, dir, extras string) {
	t.Helper()
	b, err := os.ReadFile(extras)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "link" && len(f) == 3:
			p := filepath.Join(dir, f[1])
			if err := errors.Join(os.Remove(p), os.Link(filepath.Join(dir, f[2]), p)); err != nil {
				t.Fatal(err)
			}
		case f[0] == "xattr" && len(f) == 4:
			val, err := hex.DecodeString(f[3])
			if err == nil {
				err = unix.Lsetxattr(filepath.Join(dir, f[1]), f[2], val, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: bad line %q", extras, line)
		}
	}
}
