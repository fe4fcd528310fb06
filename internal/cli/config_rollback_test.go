package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFromBeforeRevoke (issue 18 M4): after passwd --revoke, the
// storage puts the config from before it back. Every credential both
// configs share (the old password's slot is gone from the new one, but a
// keyfile slot is in both) would open it and write new files under the
// revoked epoch's key, which the old password reads. This machine
// remembers the epoch it opened: every door refuses the old config
// (exit 28, one line), freshness status says why, and accept takes it
// knowingly.
func TestConfigFromBeforeRevoke(t *testing.T) {
	dir, pf, mnt := newMountableVault(t, "old password")
	npf := writePassfile(t, "new password")
	keyfile := filepath.Join(t.TempDir(), "key")
	keyAdd(t, "", "--passfile", pf, "--new-keyfile", keyfile, dir)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.WriteFile(filepath.Join(mnt, "before"), []byte("before the revoke"), 0o644))
	run(t, "", "unmount", mnt).want(t, 0)
	oldConfig := readConfig(t, dir)

	run(t, "", "key", "remove", "--passfile", pf, dir, "2").want(t, 0) // the recovery slot: revoke cannot re-wrap it
	run(t, "", append([]string{"passwd", "--revoke", "--passfile", pf, "--new-passfile", npf, "--keyfile", keyfile, dir}, cheapKDF...)...).want(t, 0)
	run(t, "", "mount", "--passfile", npf, dir, mnt).want(t, 0)
	must(t, os.WriteFile(filepath.Join(mnt, "after"), []byte("after the revoke"), 0o644))
	run(t, "", "unmount", mnt).want(t, 0)

	newConfig := readConfig(t, dir)
	putConfig := func(b []byte) {
		t.Helper()
		p := filepath.Join(dir, "encryptfs.conf")
		must(t, os.Chmod(p, 0o600))
		must(t, os.WriteFile(p, b, 0o400))
	}
	putConfig(oldConfig)
	for _, args := range [][]string{
		{"mount", "--keyfile", keyfile, dir, mnt},
		{"mount", "--ro", "--passfile", pf, dir, mnt},
		{"cat", "--keyfile", keyfile, dir, "before"},
		{"import", "--keyfile", keyfile, dir, t.TempDir()},
		{"fsck", "--keyfile", keyfile, dir},
	} {
		r := run(t, "", args...)
		r.want(t, ExitFreshRolledBack)
		if !strings.Contains(r.stderr, "older version") || !strings.Contains(r.stderr, "epoch") {
			t.Errorf("%s: %s", args[0], r.stderr)
		}
		if mountSource(mnt) != "" {
			t.Fatalf("%v mounted the old config", args)
		}
	}
	r := run(t, "", "freshness", "status", "--keyfile", keyfile, dir)
	r.want(t, ExitFreshRolledBack)
	if !strings.Contains(r.stdout, "rolled back: encryptfs.conf: at master-key epoch 0, where this machine opened epoch 1") {
		t.Errorf("status:\n%s", r.stdout)
	}

	// The config put back as it was: everything works again.
	putConfig(newConfig)
	run(t, "", "cat", "--passfile", npf, dir, "after").want(t, 0)
	run(t, "", "freshness", "status", "--passfile", npf, dir).want(t, 0)

	// A restore the user made (the whole vault from before the revoke):
	// accept takes it, and it opens again.
	after := run(t, "", "encrypt-path", "--passfile", npf, dir, "after")
	after.want(t, 0)
	must(t, os.Remove(filepath.Join(dir, strings.TrimSpace(after.stdout))))
	putConfig(oldConfig)
	run(t, "", "freshness", "accept", "--keyfile", keyfile, dir).want(t, 0)
	r = run(t, "", "cat", "--passfile", pf, dir, "before")
	r.want(t, 0)
	if r.stdout != "before the revoke" {
		t.Fatalf("cat after accept: %q", r.stdout)
	}
}

// TestSnapshotFromBeforeUpgrade (issue 18 M2): the whole vault put back
// to a snapshot from before `upgrade` added freshness. Its config has no
// Freshness flag, so nothing in CIPHERDIR is checked; this machine
// remembers the flag: status exits 28, a strict mount refuses, a plain
// mount says so in one line.
func TestSnapshotFromBeforeUpgrade(t *testing.T) {
	dir, pf, mnt := newMountableVault(t, "pw", "--freshness=false")
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.WriteFile(filepath.Join(mnt, "f"), []byte("version 1"), 0o644))
	run(t, "", "unmount", mnt).want(t, 0)
	snap := filepath.Join(t.TempDir(), "snap")
	cpA(t, dir, snap)

	run(t, "", "upgrade", "--passfile", pf, dir).want(t, 0)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.WriteFile(filepath.Join(mnt, "f"), []byte("version 2"), 0o644))
	run(t, "", "unmount", mnt).want(t, 0)
	run(t, "", "freshness", "status", "--passfile", pf, dir).want(t, 0)

	must(t, os.RemoveAll(dir))
	cpA(t, snap, dir)
	r := run(t, "", "freshness", "status", "--passfile", pf, dir)
	r.want(t, ExitFreshRolledBack)
	if !strings.Contains(r.stdout, "without the feature Freshness") {
		t.Errorf("status:\n%s", r.stdout)
	}
	run(t, "", "mount", "--passfile", pf, "--freshness", "strict", dir, mnt).want(t, ExitFreshRolledBack)
	if mountSource(mnt) != "" {
		t.Fatal("a strict mount mounted the snapshot")
	}
	r = run(t, "", "mount", "--passfile", pf, dir, mnt)
	r.want(t, 0)
	if !strings.Contains(r.stderr, "older version") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("mount of the snapshot said:\n%s", r.stderr)
	}
	run(t, "", "unmount", mnt).want(t, 0)
}
