package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// TestUpgradeRootsCLI: `encryptfs upgrade` gives an upgraded vault
// everything init makes (BoundLocations, FileRoots, Freshness). A
// format-1 vault with a multi-chunk file, a sparse file and a hard link,
// made through a real mount, is upgraded; info lists the three feature
// flags, the mount reads every file identical, and fsck (which checks
// every root) finds it clean. Then the committed bound example vault
// (no file roots) is upgraded: FileRoots is added, its files read the
// same, fsck is clean.
func TestUpgradeRootsCLI(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw") // format 1
	pf := writePassfile(t, "pw")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.MkdirAll(filepath.Join(mnt, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(mnt, "d/big"), bytes.Repeat([]byte("roots upgrade "), 20000), 0o644)) // many chunks
	must(t, os.WriteFile(filepath.Join(mnt, "small"), []byte("small"), 0o600))
	must(t, os.WriteFile(filepath.Join(mnt, "empty"), nil, 0o600))
	sparse, err := os.Create(filepath.Join(mnt, "sparse"))
	must(t, err)
	_, err = sparse.WriteAt([]byte("head"), 0)
	must(t, err)
	_, err = sparse.WriteAt([]byte("tail"), 200000) // holes between
	must(t, err)
	must(t, sparse.Close())
	must(t, os.Link(filepath.Join(mnt, "small"), filepath.Join(mnt, "d/small-too")))
	want := readMountTree(t, mnt)
	run(t, "", "unmount", mnt).want(t, 0)

	r := run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "location binding and file roots") {
		t.Fatalf("upgrade said:\n%s", r.stdout)
	}
	wantFlags(t, dir, "BoundLocations", "FileRoots", "Freshness")
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	got := readMountTree(t, mnt)
	run(t, "", "unmount", mnt).want(t, 0)
	sameMountTree(t, "the upgraded format-1 vault", got, want)
	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)

	// The committed bound example vault: bound, no roots, no freshness.
	// Its VaultID is fixed: another test's copy may have recorded it in
	// the package's freshness state; this copy gets a state of its own.
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	ex := filepath.Join(t.TempDir(), "cipher")
	if out, err := exec.Command("cp", "-a", filepath.Join("..", "..", "testdata", "example-vaults", "v2-bound-aes-256-gcm"), ex).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	epf := writePassfile(t, "encryptfs example v2")
	run(t, "", "mount", "--passfile", epf, ex, mnt).want(t, 0)
	want = readMountTree(t, mnt)
	run(t, "", "unmount", mnt).want(t, 0)
	if len(want) == 0 {
		t.Fatal("the example vault reads empty")
	}
	r = run(t, "", "upgrade", "--passfile", epf, ex)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "Added file roots") {
		t.Fatalf("upgrade of the bound example said:\n%s", r.stdout)
	}
	wantFlags(t, ex, "BoundLocations", "FileRoots", "Freshness")
	run(t, "", "mount", "--passfile", epf, ex, mnt).want(t, 0)
	got = readMountTree(t, mnt)
	run(t, "", "unmount", mnt).want(t, 0)
	sameMountTree(t, "the upgraded example vault", got, want)
	run(t, "", "fsck", "--passfile", epf, ex).want(t, 0)
	r = run(t, "", "upgrade", "--passfile", epf, ex)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "up to date") || !strings.Contains(r.stdout, "file roots") {
		t.Fatalf("second upgrade said:\n%s", r.stdout)
	}
}

// wantFlags checks that info --json lists each feature flag of want.
func wantFlags(t *testing.T, dir string, want ...string) {
	t.Helper()
	r := run(t, "", "info", "--json", dir)
	r.want(t, 0)
	var info infoJSON
	must(t, json.Unmarshal([]byte(r.stdout), &info))
	for _, f := range want {
		if !hasFlag(info.FeatureFlags, f) {
			t.Fatalf("info of %s: feature flags %v, want %s", dir, info.FeatureFlags, f)
		}
	}
}

// readMountTree maps every regular file under root (relative path) to its
// contents, and every directory and symlink to a marker.
func readMountTree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	must(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir():
			m[rel] = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			m[rel] = "-> " + target
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[rel] = string(b)
		}
		return nil
	}))
	return m
}

// sameMountTree fails unless got and want hold the same paths and contents.
func sameMountTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			t.Errorf("%s: %s: %d bytes (present %v), want %d", what, p, len(g), ok, len(w))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: extra %s", what, p)
		}
	}
}

// TestUpgradeRootsBoundCLI: a bound vault made without file roots (init
// --file-roots=false, with freshness), its files imported (which records
// them for freshness), gets FileRoots from upgrade; its files read the
// same, fsck is clean, and freshness status is OK (a file's gen goes
// from 0 to 1, which its record accepts). A file with a damaged chunk
// stops the upgrade before anything changes (11, named), where a
// conversion that did not check would give it a root.
func TestUpgradeRootsBoundCLI(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2", "--file-roots=false")
	pf := writePassfile(t, "pw")
	big := strings.Repeat("0123456789", 10000)
	putFile(t, dir, "big.txt", big, "--passfile", pf)
	putFile(t, dir, "small.txt", "small", "--passfile", pf)
	if flags, _ := configParams(t, dir); hasFlag(flags, "FileRoots") || !hasFlag(flags, "Freshness") {
		t.Fatalf("init --file-roots=false made flags %v", flags)
	}

	// A damaged chunk first: one bit of big.txt's second chunk.
	enc := filepath.Join(dir, backingOf(t, dir, pf, "big.txt"))
	orig, err := os.ReadFile(enc)
	must(t, err)
	bad := bytes.Clone(orig)
	bad[len(bad)-100] ^= 1
	must(t, os.WriteFile(enc, bad, 0o600))
	r := run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, ExitCorruptData)
	if !strings.Contains(r.stderr, "big.txt") || !strings.Contains(r.stderr, "do not authenticate") {
		t.Fatalf("upgrade of a damaged file said: %s", r.stderr)
	}
	if flags, _ := configParams(t, dir); hasFlag(flags, "FileRoots") {
		t.Fatal("a blocked upgrade added FileRoots")
	}
	if _, err := os.Stat(filepath.Join(dir, "encryptfs.upgrade")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a blocked upgrade left its marker: %v", err)
	}
	must(t, os.WriteFile(enc, orig, 0o600))

	r = run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "Added file roots") {
		t.Fatalf("upgrade said:\n%s", r.stdout)
	}
	wantFlags(t, dir, "BoundLocations", "FileRoots", "CompactRoots", "Freshness")
	for name, want := range map[string]string{"big.txt": big, "small.txt": "small"} {
		r := run(t, "", "cat", "--passfile", pf, dir, name)
		r.want(t, 0)
		if r.stdout != want {
			t.Fatalf("cat %s after the upgrade: %d bytes, want %d", name, len(r.stdout), len(want))
		}
	}
	// A file of 2..16 chunks: piece A of tag block 0 (256 bytes) in the
	// compact layout.
	if got, err := os.ReadFile(enc); err != nil || len(got) < len(orig)+256 {
		t.Fatalf("big.txt's backing after the upgrade: %d bytes (was %d), %v: no tag entries", len(got), len(orig), err)
	}
	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
	r = run(t, "", "freshness", "status", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "freshness: OK") {
		t.Fatalf("freshness status after the upgrade:\n%s", r.stdout)
	}
}
