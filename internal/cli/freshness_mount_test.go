package cli

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/fstest"
)

// configParams reads the Params of dir's encryptfs.conf.
func configParams(t *testing.T, dir string) (flags []string, vaultID []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "encryptfs.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Params struct {
			FeatureFlags []string
			VaultID      string
		}
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	id, _ := base64.StdEncoding.DecodeString(c.Params.VaultID)
	return c.Params.FeatureFlags, id
}

func hasFlag(flags []string, f string) bool {
	for _, x := range flags {
		if x == f {
			return true
		}
	}
	return false
}

// TestFreshnessMount: a default vault records freshness through a real
// mount, in the default state directory (under XDG_STATE_HOME, set by
// TestMain); status is then clean (0). A second device (its own
// --state-dir) mounting the same CIPHERDIR after the first wrote is not
// told of a rollback, and records its own change. A backing file deleted
// is reported (behind 27; rolled back 28 with --grace), the next mount
// says so in one line, accept records the state (0).
func TestFreshnessMount(t *testing.T) {
	fstest.RequireFUSE(t)
	dir := filepath.Join(t.TempDir(), "cipher")
	pf := writePassfile(t, "pw")
	r := run(t, "", append(append([]string{"init", "--passfile", pf}, cheapKDF...), dir)...)
	r.want(t, 0)
	flags, vid := configParams(t, dir)
	if !hasFlag(flags, "Freshness") || !hasFlag(flags, "BoundLocations") {
		t.Fatalf("init made flags %v", flags)
	}
	defState := filepath.Join(os.Getenv("XDG_STATE_HOME"), "encryptfs", hex.EncodeToString(vid))
	if os.Getenv("XDG_STATE_HOME") == "" {
		t.Fatal("TestMain did not set XDG_STATE_HOME")
	}
	if r := run(t, "", "info", dir); !strings.Contains(r.stdout, "Freshness:      on; this machine's state in "+defState) {
		t.Fatalf("info does not show the state directory %s:\n%s", defState, r.stdout)
	}
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	status := func(args ...string) result {
		return run(t, "", append(append([]string{"freshness", "status", "--passfile", pf}, args...), dir)...)
	}

	// Device A: the default state directory.
	r = run(t, "", "mount", "--passfile", pf, dir, mnt)
	r.want(t, 0)
	if strings.Contains(r.stderr, "freshness") {
		t.Fatalf("the first mount of a new vault reported:\n%s", r.stderr)
	}
	must(t, os.MkdirAll(filepath.Join(mnt, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(mnt, "d", "a.txt"), []byte("written by device A"), 0o644))
	must(t, os.WriteFile(filepath.Join(mnt, "top.txt"), []byte("top"), 0o644))
	run(t, "", "unmount", mnt).want(t, 0)
	r = status()
	r.want(t, 0)
	if !strings.Contains(r.stdout, "freshness: OK") {
		t.Fatalf("status after the first mount:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(defState, "state.json")); err != nil {
		t.Fatalf("no state in the default state directory: %v", err)
	}

	// Device B mounts after A wrote: nothing went back for it.
	stateB := filepath.Join(t.TempDir(), "state-b")
	r = run(t, "", "mount", "--passfile", pf, "-o", "state_dir="+stateB, dir, mnt)
	r.want(t, 0)
	if strings.Contains(r.stderr, "rolled back") {
		t.Fatalf("a second device's first mount reported a rollback:\n%s", r.stderr)
	}
	must(t, os.WriteFile(filepath.Join(mnt, "d", "b.txt"), []byte("written by device B"), 0o644))
	run(t, "", "unmount", mnt).want(t, 0)
	status("--state-dir", stateB).want(t, 0)
	if _, err := os.Stat(filepath.Join(stateB, "state.json")); err != nil {
		t.Fatalf("-o state_dir= not used: %v", err)
	}
	status().want(t, 0) // A sees B's recorded change

	// A backing file deleted: behind, or rolled back past the grace.
	r = run(t, "", "encrypt-path", "--passfile", pf, dir, "d/a.txt")
	r.want(t, 0)
	must(t, os.Remove(filepath.Join(dir, strings.TrimSpace(r.stdout))))
	r = status()
	r.want(t, ExitFreshBehind)
	if !strings.Contains(r.stdout, "/d/a.txt: deleted") {
		t.Fatalf("status does not name the deleted file:\n%s", r.stdout)
	}
	r = status("--grace", "1ns")
	r.want(t, ExitFreshRolledBack)
	// The next mount says so, in one line, with the next step.
	r = run(t, "", "mount", "--passfile", pf, dir, mnt)
	r.want(t, 0)
	lines := 0
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "freshness") {
			lines++
			if !strings.Contains(l, "is behind") || !strings.Contains(l, "encryptfs freshness status "+dir) {
				t.Errorf("mount's freshness line: %q", l)
			}
		}
	}
	if lines != 1 {
		t.Fatalf("mount said %d freshness lines:\n%s", lines, r.stderr)
	}
	run(t, "", "unmount", mnt).want(t, 0)
	r = run(t, "", "freshness", "accept", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "/d/a.txt") {
		t.Fatalf("accept does not show what went back:\n%s", r.stdout)
	}
	status("--grace", "1ns").want(t, 0)
	status("--state-dir", stateB).want(t, 0) // A's accept recorded the deletion
	if !fresh.WaitUnlocked(defState, 0) {
		t.Fatal("the state is still locked after the commands ended")
	}

	// fsck: what is behind is a note, what went back a problem.
	snap := filepath.Join(t.TempDir(), "snap")
	cpA(t, dir, snap)
	r = run(t, "", "encrypt-path", "--passfile", pf, dir, "top.txt")
	r.want(t, 0)
	must(t, os.Remove(filepath.Join(dir, strings.TrimSpace(r.stdout))))
	r = run(t, "", "fsck", "--passfile", pf, dir)
	r.want(t, ExitFreshBehind) // clean, but behind: as freshness status says
	if !strings.Contains(r.stdout, "note: freshness: behind: /top.txt: deleted") {
		t.Fatalf("fsck does not note the deleted file:\n%s", r.stdout)
	}
	if !strings.HasSuffix(r.stdout, ": clean, 1 note\n") || !strings.Contains(r.stderr, "freshness status") {
		t.Fatalf("fsck's summary does not count its note, or its line names no next step:\n%s%s", r.stdout, r.stderr)
	}
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.WriteFile(filepath.Join(mnt, "later.txt"), nil, 0o644))
	run(t, "", "unmount", mnt).want(t, 0)
	must(t, os.RemoveAll(dir))
	cpA(t, snap, dir) // the whole vault put back to before that mount
	r = run(t, "", "fsck", "--passfile", pf, dir)
	r.want(t, ExitFsckProblems)
	if !strings.Contains(r.stdout, "rolled-back") || !strings.Contains(r.stdout, "epoch went back") {
		t.Fatalf("fsck does not report the rollback:\n%s", r.stdout)
	}

	// --freshness strict refuses the rolled-back vault (28), read-only
	// too, and says what to do; after accept it mounts.
	notMounted := func() {
		t.Helper()
		if ents, err := os.ReadDir(mnt); err != nil || len(ents) != 0 || mountSource(mnt) != "" {
			t.Fatalf("the refused mount is mounted: %v %v", ents, err)
		}
	}
	r = run(t, "", "mount", "--passfile", pf, "--freshness", "strict", dir, mnt)
	r.want(t, ExitFreshRolledBack)
	if !strings.Contains(r.stderr, "rolled back") || !strings.Contains(r.stderr, "encryptfs freshness accept") {
		t.Fatalf("strict mount's refusal:\n%s", r.stderr)
	}
	notMounted()
	run(t, "", "mount", "--passfile", pf, "-o", "freshness=strict,ro", dir, mnt).want(t, ExitFreshRolledBack)
	notMounted()
	run(t, "", "mount", "--passfile", pf, "--freshness", "sometimes", dir, mnt).want(t, ExitUsage)
	run(t, "", "freshness", "accept", "--passfile", pf, dir).want(t, 0)
	run(t, "", "mount", "--passfile", pf, "--freshness", "strict", dir, mnt).want(t, 0)
	if _, err := os.Stat(filepath.Join(mnt, "top.txt")); err != nil {
		t.Fatalf("after accept: %v", err)
	}
	run(t, "", "unmount", mnt).want(t, 0)
}

// TestFreshnessUpgradeAndUnsupported: a vault without the flag (format 1,
// and format 2 bound without it) has no freshness: status says so, exit
// ExitUnsupported. upgrade adds the flag (a bound vault: the config
// only), after which status runs (nothing recorded yet: 0), and a second
// upgrade says the vault is up to date.
func TestFreshnessUpgradeAndUnsupported(t *testing.T) {
	v1, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	r := run(t, "", "freshness", "status", "--passfile", pf, v1)
	r.want(t, ExitUnsupported)
	if !strings.Contains(r.stderr, "has no freshness") {
		t.Fatalf("status of a format-1 vault: %s", r.stderr)
	}
	r = run(t, "", "upgrade", "--passfile", pf, v1)
	r.want(t, 0)
	if flags, _ := configParams(t, v1); !hasFlag(flags, "Freshness") || !strings.Contains(r.stdout, "Turned on freshness") {
		t.Fatalf("upgrade of format 1: flags %v, said:\n%s", flags, r.stdout)
	}

	// The committed bound example vault (format 2, no freshness).
	dir := filepath.Join(t.TempDir(), "cipher")
	if out, err := exec.Command("cp", "-a", filepath.Join("..", "..", "testdata", "example-vaults", "v2-bound-aes-256-gcm"), dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	epf := writePassfile(t, "encryptfs example v2")
	status := func() result { return run(t, "", "freshness", "status", "--passfile", epf, dir) }
	r = status()
	r.want(t, ExitUnsupported)
	if !strings.Contains(r.stderr, "has no freshness") || !strings.Contains(r.stderr, "encryptfs upgrade") {
		t.Fatalf("status of a bound vault without the flag: %s", r.stderr)
	}
	r = run(t, "", "upgrade", "--passfile", epf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "Turned on freshness") {
		t.Fatalf("upgrade said:\n%s", r.stdout)
	}
	if flags, _ := configParams(t, dir); !hasFlag(flags, "Freshness") {
		t.Fatalf("flags after upgrade: %v", flags)
	}
	// Every key slot still opens it (SlotParams kept).
	run(t, "", "ls", "--keyfile", filepath.Join("..", "..", "testdata", "example-vaults", "v2-credentials", "keyfile"), dir).want(t, 0)
	r = status()
	r.want(t, 0)
	if !strings.Contains(r.stdout, "nothing recorded yet") {
		t.Fatalf("status before any mount:\n%s", r.stdout)
	}
	r = run(t, "", "upgrade", "--passfile", epf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "up to date") || !strings.Contains(r.stdout, "freshness") {
		t.Fatalf("second upgrade said:\n%s", r.stdout)
	}
	// import records: status is clean afterwards, not behind.
	run(t, "", "import", "--passfile", epf, dir, makePlainTree(t), "in").want(t, 0)
	r = status()
	r.want(t, 0)
	if !strings.Contains(r.stdout, "freshness: OK") {
		t.Fatalf("status after import:\n%s", r.stdout)
	}
}
