package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFreshnessCommands: freshness accept records a vault, status is then
// clean (0); a backing file deleted is reported with its plaintext path,
// behind at first (27) and rolled back once it outlasts --grace (28);
// accept shows it and status is clean again. A legitimate change made
// through the vault package after accept is not a rollback (it is
// recorded by nobody: behind).
func TestFreshnessCommands(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2")
	pf := writePassfile(t, "pw")
	state := filepath.Join(t.TempDir(), "state")
	fr := func(args ...string) result {
		return run(t, "", append([]string{"freshness", args[0], "--passfile", pf, "--state-dir", state}, append(args[1:], dir)...)...)
	}
	// Nothing recorded yet: not a rollback.
	r := fr("status")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "nothing recorded yet") {
		t.Fatalf("status of a new vault:\n%s", r.stdout)
	}
	// import is another device (the default state directory): it records.
	run(t, "", "import", "--passfile", pf, dir, makePlainTree(t)).want(t, 0)
	fr("status").want(t, 0)

	r = fr("accept")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "recorded") {
		t.Fatalf("accept said:\n%s", r.stdout)
	}
	fr("status").want(t, 0)

	r = run(t, "", "encrypt-path", "--passfile", pf, dir, "sub/big.bin")
	r.want(t, 0)
	if err := os.Remove(filepath.Join(dir, strings.TrimSpace(r.stdout))); err != nil {
		t.Fatal(err)
	}
	r = fr("status")
	r.want(t, ExitFreshBehind)
	if !strings.Contains(r.stdout, "/sub/big.bin: deleted") {
		t.Fatalf("status does not name the deleted file:\n%s", r.stdout)
	}
	r = fr("status", "--grace", "1ns")
	r.want(t, ExitFreshRolledBack)
	if !strings.Contains(r.stdout, "rolled back: /sub/big.bin: deleted") {
		t.Fatalf("status does not name the deleted file:\n%s", r.stdout)
	}
	r = fr("accept")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "/sub/big.bin") {
		t.Fatalf("accept does not show what went back:\n%s", r.stdout)
	}
	fr("status", "--grace", "1ns").want(t, 0)

	// The whole vault put back to before the accept: its epoch went back.
	snap := filepath.Join(t.TempDir(), "snap")
	cpA(t, dir, snap)
	run(t, "", "import", "--passfile", pf, dir, makePlainTree(t), "again").want(t, 0)
	fr("accept").want(t, 0)
	os.RemoveAll(dir)
	cpA(t, snap, dir)
	r = fr("status")
	r.want(t, ExitFreshRolledBack)
	if !strings.Contains(r.stdout, "epoch went back") {
		t.Fatalf("status after a whole-vault rollback:\n%s", r.stdout)
	}
}

func cpA(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
}
