package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// TestExampleVaultV2CompactCLI: a copy of the committed example vault of
// compact file roots (testdata/example-vaults/v2-compact-aes-256-gcm,
// read by vault's TestExampleVaultV2Compact) is clean for fsck, mounts
// and reads its files (the pattern of vault's exampleContent), and
// upgrade only adds freshness and trimmed leaves (the config), then says
// it is up to date.
func TestExampleVaultV2CompactCLI(t *testing.T) {
	fstest.RequireFUSE(t)
	// Its VaultID is v2-bound-aes-256-gcm's, which other tests copy
	// without the features this upgrade records: a state of its own.
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	examples := filepath.Join("..", "..", "testdata", "example-vaults")
	dir := filepath.Join(t.TempDir(), "v2-compact")
	cpA(t, filepath.Join(examples, "v2-compact-aes-256-gcm"), dir)
	pf := writePassfile(t, "encryptfs example v2")

	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	got := readMountTree(t, mnt)
	run(t, "", "unmount", mnt).want(t, 0)
	pattern := examplePattern
	sparse := make([]byte, 600*4096+11+4)
	for _, at := range []int{0, 5*4096 + 3, 600*4096 + 11} {
		copy(sparse[at:], "data")
	}
	for name, want := range map[string]string{
		"hello.txt":          "Hello, EncryptFS v1!\n",
		"multi.bin":          pattern(3*4096 + 123),
		"compact/one.txt":    "one chunk, no tag entry stored\n",
		"compact/c17.bin":    pattern(16*4096 + 100),
		"compact/c300.bin":   pattern(300*4096 + 7),
		"compact/sparse.bin": string(sparse),
	} {
		if got[name] != want {
			t.Errorf("%s through the mount: %d bytes, want %d", name, len(got[name]), len(want))
		}
	}
	if !bytes.Equal([]byte(got["dir/sub/nested.txt"]), []byte("nested\n")) {
		t.Errorf("nested.txt: %q", got["dir/sub/nested.txt"])
	}
	r := run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "Turned on freshness") || !strings.Contains(r.stdout, "Turned on trimmed leaves") || strings.Contains(r.stdout, "rewritten") {
		t.Fatalf("upgrade of the example said:\n%s", r.stdout)
	}
	r = run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "up to date") {
		t.Fatalf("second upgrade of the example said:\n%s", r.stdout)
	}
	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
	if _, err := os.Stat(filepath.Join(dir, "encryptfs.upgrade")); !os.IsNotExist(err) {
		t.Fatalf("marker after the upgrade: %v", err)
	}
}

// examplePattern is the contents of the example vaults' numbered files
// (vault's exampleContent).
func examplePattern(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/4096)
	}
	return string(b)
}

// TestExampleVaultV2TrimmedCLI: a copy of the committed example vault of
// trimmed leaves (testdata/example-vaults/v2-trimmed-aes-256-gcm, read by
// vault's TestExampleVaultV2Trimmed: files of both rules) is clean for
// fsck, reads through cat and through a mount on the test's transport,
// and a file of the old rule written through the mount (it moves to
// trimmed leaves at its close) reads back after a remount, with fsck
// clean.
func TestExampleVaultV2TrimmedCLI(t *testing.T) {
	fstest.RequireFUSE(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	examples := filepath.Join("..", "..", "testdata", "example-vaults")
	dir := filepath.Join(t.TempDir(), "v2-trimmed")
	cpA(t, filepath.Join(examples, "v2-trimmed-aes-256-gcm"), dir)
	pf := writePassfile(t, "encryptfs example v2")
	wantFlags(t, dir, "CompactRoots", "TrimmedLeaves")
	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
	r := run(t, "", "cat", "--passfile", pf, dir, "trimmed/one.txt")
	if r.want(t, 0); r.stdout != "one chunk, a 16-byte leaf\n" {
		t.Fatalf("cat trimmed/one.txt: %q", r.stdout)
	}
	want := map[string]string{
		"compact/c17.bin":  examplePattern(16*4096 + 100), // whole-block leaves
		"compact/one.txt":  "one chunk, rewritten: now trimmed\n",
		"trimmed/one.txt":  "one chunk, a 16-byte leaf\n",
		"trimmed/c17.bin":  examplePattern(16*4096 + 200),
		"trimmed/c300.bin": examplePattern(300*4096 + 9),
	}
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	got := readMountTree(t, mnt)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s through the mount: %d bytes, want %d", name, len(got[name]), len(w))
		}
	}
	f, err := os.OpenFile(filepath.Join(mnt, "compact", "c17.bin"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("appended")
	must(t, errors.Join(err, f.Close()))
	run(t, "", "unmount", mnt).want(t, 0)
	want["compact/c17.bin"] += "appended"
	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	got = readMountTree(t, mnt)
	run(t, "", "unmount", mnt).want(t, 0)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s after the remount: %d bytes, want %d", name, len(got[name]), len(w))
		}
	}
}
