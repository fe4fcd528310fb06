package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fstest"
)

// TestRevokeCLI: key remove --revoke and passwd --revoke through the
// binary, with real mounts: a slot that needs its credential is named
// and nothing changes; with the keyfile given both revokes go through;
// the vault mounts with the new password and the age identity (its slot
// re-sealed without it) and reads old and new files; a copy of the vault
// with the config kept from before, mounted with the old password, reads
// the old file but not the new one, nor the new directory.
func TestRevokeCLI(t *testing.T) {
	fstest.RequireFUSE(t)
	recipient, identity := x25519(t)
	pf, npf := writePassfile(t, "old"), writePassfile(t, "new")
	dir, _ := newVault(t, "old", "--format", "2") // slots: 1 password, 2 recovery
	r := run(t, "", "info", "--json", dir)
	r.want(t, 0)
	var info infoJSON
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || !slices.Contains(info.FeatureFlags, "BoundLocations") {
		t.Fatalf("init did not make a location-bound vault (%v): %s", err, r.stdout)
	}
	keyAdd(t, "", "--passfile", pf, "--recipient", recipient, dir) // 3
	keyfile := filepath.Join(t.TempDir(), "kf")
	keyAdd(t, "", "--passfile", pf, "--new-keyfile", keyfile, dir) // 4
	putFile(t, dir, "old.txt", "before", "--passfile", pf)
	kept := readConfig(t, dir)

	r = run(t, "", append([]string{"passwd", "--revoke", "--passfile", pf, "--new-passfile", npf, dir}, cheapKDF...)...)
	r.want(t, ExitKeySlot)
	if !strings.Contains(r.stderr, "2 (recovery") || !strings.Contains(r.stderr, "4 (keyfile") || strings.Contains(r.stderr, "3 (age") {
		t.Fatalf("passwd --revoke without credentials: %q", r.stderr)
	}
	sameConfig(t, dir, kept)

	r = run(t, "", "key", "remove", "--revoke", "--passfile", pf, "--keyfile", keyfile, dir, "2")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "key epoch 1") || !strings.Contains(r.stdout, "Removed key slot 2") {
		t.Fatalf("key remove --revoke: %s", r.stdout)
	}
	r = run(t, "", append([]string{"passwd", "--revoke", "--passfile", pf, "--keyfile", keyfile, "--new-passfile", npf, dir}, cheapKDF...)...)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "key epoch 2") {
		t.Fatalf("passwd --revoke: %s", r.stdout)
	}

	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", npf, dir, mnt).want(t, 0)
	writeFile(t, filepath.Join(mnt, "new.txt"), "after")
	if err := os.Mkdir(filepath.Join(mnt, "newdir"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mnt, "newdir", "secret-name"), "x")
	run(t, "", "unmount", mnt).want(t, 0)
	for _, unlock := range [][]string{{"--passfile", npf}, {"--identity", identity}, {"--keyfile", keyfile}} {
		run(t, "", append(append([]string{"mount", "--ro"}, unlock...), dir, mnt)...).want(t, 0)
		for name, want := range map[string]string{"old.txt": "before", "new.txt": "after", "newdir/secret-name": "x"} {
			if got, err := os.ReadFile(filepath.Join(mnt, name)); err != nil || string(got) != want {
				t.Fatalf("%v: %s: %q %v", unlock, name, got, err)
			}
		}
		run(t, "", "unmount", mnt).want(t, 0)
	}
	run(t, "", "ls", "--passfile", pf, dir).want(t, ExitWrongPassword)

	// The attacker's copy: today's vault, the config from before.
	atk := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", dir, atk).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	os.Remove(filepath.Join(atk, config.FileName))
	if err := os.WriteFile(filepath.Join(atk, config.FileName), kept, 0o400); err != nil {
		t.Fatal(err)
	}
	amnt := t.TempDir()
	cleanupMount(t, amnt)
	// This machine remembers the epoch it opened: it refuses the old
	// config (docs/format.md §15a, TestConfigFromBeforeRevoke). The
	// attacker mounts on a machine of their own (no memory of the vault:
	// its own state directory).
	run(t, "", "mount", "--ro", "--passfile", pf, atk, amnt).want(t, ExitFreshRolledBack)
	run(t, "", "mount", "--ro", "--passfile", pf, "--state-dir", t.TempDir(), atk, amnt).want(t, 0)
	if got, err := os.ReadFile(filepath.Join(amnt, "old.txt")); err != nil || string(got) != "before" {
		t.Fatalf("old key, old file: %q %v", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(amnt, "new.txt")); err == nil {
		t.Fatalf("old key read the new file: %q", got)
	}
	if ents, err := os.ReadDir(filepath.Join(amnt, "newdir")); err == nil {
		t.Fatalf("old key listed the new directory: %v", ents)
	}
	run(t, "", "unmount", amnt).want(t, 0)
}
