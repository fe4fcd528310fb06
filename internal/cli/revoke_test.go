package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// TestRevokeRefusedWithoutEpochs: on a vault whose content records no
// master-key epoch (format 1, or format 2 without location binding),
// passwd --revoke and key remove --revoke refuse with one line that says
// why (6), change nothing, and the vault still mounts and reads.
func TestRevokeRefusedWithoutEpochs(t *testing.T) {
	fstest.RequireFUSE(t)
	pf, npf := writePassfile(t, "pw"), writePassfile(t, "new")

	v1, _ := newVault(t, "pw")
	before := readConfig(t, v1)
	r := run(t, "", append([]string{"passwd", "--revoke", "--passfile", pf, "--new-passfile", npf, v1}, cheapKDF...)...)
	r.want(t, ExitUnsupported)
	if !strings.Contains(r.stderr, "format-1 vault has one key") {
		t.Fatalf("format 1: %q", r.stderr)
	}
	sameConfig(t, v1, before)

	// A format-2 vault without binding: one made before `init` bound
	// vaults (the committed example vault; `init` and `upgrade` bind now).
	dir := filepath.Join(t.TempDir(), "cipher")
	if out, err := exec.Command("cp", "-a", filepath.Join("..", "..", "testdata", "example-vaults", "v2-aes-256-gcm"), dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	pf = writePassfile(t, "encryptfs example v2")
	putFile(t, dir, "kept.txt", "still here", "--passfile", pf)
	keyfile := filepath.Join(t.TempDir(), "kf")
	slot := keyAdd(t, "", "--passfile", pf, "--new-keyfile", keyfile, dir)
	before = readConfig(t, dir)
	for _, args := range [][]string{
		append([]string{"passwd", "--revoke", "--passfile", pf, "--new-passfile", npf, dir}, cheapKDF...),
		{"key", "remove", "--revoke", "--passfile", pf, dir, slot},
	} {
		r := run(t, "", args...)
		r.want(t, ExitUnsupported)
		if !strings.Contains(r.stderr, "--revoke: this vault's files do not record a master-key epoch") || !strings.Contains(r.stderr, "nothing was changed") {
			t.Fatalf("%v: %q", args, r.stderr)
		}
		sameConfig(t, dir, before)
	}
	// An unknown slot is refused before anything else.
	run(t, "", "key", "remove", "--revoke", "--passfile", pf, dir, "9").want(t, ExitKeySlot)
	sameConfig(t, dir, before)

	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	if got, err := os.ReadFile(filepath.Join(mnt, "kept.txt")); err != nil || string(got) != "still here" {
		t.Fatalf("read after the refused revokes: %q %v", got, err)
	}
	run(t, "", "unmount", mnt).want(t, 0)
}
