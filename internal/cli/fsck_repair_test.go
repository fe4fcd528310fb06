package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/vault"
)

// TestFsckRepair: without --repair fsck changes nothing; with it, each
// change is printed before it is made and the vault is clean afterwards;
// --repair refuses --salvage.
func TestFsckRepair(t *testing.T) {
	dir, pf, _ := fsckVault(t)
	// What an interrupted passwd and an interrupted rename of a long name
	// leave behind.
	if err := os.WriteFile(filepath.Join(dir, "encryptfs.conf.tmp"), []byte("{}"), 0o400); err != nil {
		t.Fatal(err)
	}
	orphan := "encryptfs.long." + strings.Repeat("A", 43) + ".name"
	if err := os.WriteFile(filepath.Join(dir, orphan), []byte("x"), 0o400); err != nil {
		t.Fatal(err)
	}
	before := hashTree(t, dir)
	r := fsckRun(t, "", "--passfile", pf, dir)
	r.want(t, ExitFsckProblems)
	unchangedTree(t, dir, before)
	if strings.Contains(r.stdout, "repair:") {
		t.Fatalf("fsck without --repair printed repairs:\n%s", r.stdout)
	}

	fsckRun(t, "", "--passfile", pf, "--repair", "--salvage", t.TempDir(), dir).want(t, ExitUsage)
	unchangedTree(t, dir, before)

	r = fsckRun(t, "", "--passfile", pf, "--repair", dir)
	r.want(t, ExitOK)
	for _, want := range []string{"repair: temp-file encryptfs.conf.tmp", "repair: orphan-sidecar " + orphan} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, ": clean") {
		t.Errorf("no clean report after the repair:\n%s", r.stdout)
	}
	for _, name := range []string{"encryptfs.conf.tmp", orphan} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", name, err)
		}
	}
	v, err := vault.Open(dir, []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.ReadFile("a/b/data"); err != nil {
		t.Fatal(err)
	}
	v.Close()
	// Nothing left: a second repair changes nothing.
	before = hashTree(t, dir)
	r = fsckRun(t, "", "--passfile", pf, "--repair", dir)
	r.want(t, ExitOK)
	if strings.Contains(r.stdout, "repair:") {
		t.Fatalf("second repair changed something:\n%s", r.stdout)
	}
	unchangedTree(t, dir, before)
}

// TestFsckRepairRefusedWhileMounted: --repair needs the vault unmounted.
func TestFsckRepairRefusedWhileMounted(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, pf, _ := fsckVault(t)
	if err := os.WriteFile(filepath.Join(dir, "encryptfs.conf.tmp"), []byte("{}"), 0o400); err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	before := hashTree(t, dir)
	r := fsckRun(t, "", "--passfile", pf, "--repair", dir)
	r.want(t, ExitCipherDir)
	if !strings.Contains(r.stderr, "mounted on "+mnt) {
		t.Errorf("stderr does not say where it is mounted:\n%s", r.stderr)
	}
	unchangedTree(t, dir, before)
	// A check alone still runs.
	fsckRun(t, "", "--passfile", pf, dir).want(t, ExitFsckProblems)
}
