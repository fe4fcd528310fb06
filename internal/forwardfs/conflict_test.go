package forwardfs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
)

// TestSyncConflictCopy: a sync tool's conflict copy "<encname> (1)" in
// CIPHERDIR shows up as "<name> (1)" and can be read, renamed and removed.
func TestSyncConflictCopy(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	must(t, os.WriteFile(filepath.Join(v.Mnt, "report.txt"), []byte("v1"), 0o644))
	bf := mounttest.BackingFiles(t, v.Cipher)
	if len(bf) != 1 {
		t.Fatalf("backing %v", bf)
	}
	b, err := os.ReadFile(bf[0])
	must(t, err)
	must(t, os.WriteFile(bf[0]+" (1)", b, 0o644))
	ents, err := os.ReadDir(v.Mnt)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "report.txt,report.txt (1)" && strings.Join(names, ",") != "report.txt (1),report.txt" {
		t.Fatalf("listing %v", names)
	}
	v.Remount(t) // cold lookup, not through readdirplus
	conflict := filepath.Join(v.Mnt, "report.txt (1)")
	if got, err := os.ReadFile(conflict); err != nil || string(got) != "v1" {
		t.Fatalf("read conflict copy: %q %v", got, err)
	}
	must(t, os.Rename(conflict, filepath.Join(v.Mnt, "kept.txt")))
	if got, err := os.ReadFile(filepath.Join(v.Mnt, "kept.txt")); err != nil || string(got) != "v1" {
		t.Fatalf("read renamed copy: %q %v", got, err)
	}
	must(t, os.Remove(filepath.Join(v.Mnt, "kept.txt")))
	if left := mounttest.BackingFiles(t, v.Cipher); len(left) != 1 {
		t.Fatalf("backing left %v", left)
	}
}

// TestSyncConflictDir: a conflict copy of a directory "<encname> (1)"
// (with its dirid inside) shows up as "<name> (1)", and its entries are
// reachable on a cold mount, where the directory is opened from the root
// by path: a conflict copy's backing name is not the encryption of its
// displayed name, so that path is found through the parent instead.
func TestSyncConflictDir(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	must(t, os.MkdirAll(filepath.Join(v.Mnt, "a", "docs"), 0o755))
	must(t, os.WriteFile(filepath.Join(v.Mnt, "a", "docs", "f"), []byte("in copy"), 0o644))
	must(t, v.Srv.Unmount())
	top := mounttest.BackingFiles(t, v.Cipher)
	if len(top) != 1 {
		t.Fatalf("backing %v", top)
	}
	sub := mounttest.BackingFiles(t, top[0])
	if len(sub) != 1 {
		t.Fatalf("backing %v", sub)
	}
	if out, err := exec.Command("cp", "-a", sub[0], sub[0]+" (1)").CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	v.Remount(t)
	if got, err := os.ReadFile(filepath.Join(v.Mnt, "a", "docs (1)", "f")); err != nil || string(got) != "in copy" {
		t.Fatalf("read in conflict copy dir: %q %v", got, err)
	}
}

// TestSyncConflictLongName: copies of a long-name entry made by sync tools,
// with the suffix appended ("encryptfs.long.<H> (1)") or put before the
// hash as if it were an extension ("encryptfs.long.sync-conflict-….<H>"),
// show up with the original's name plus the suffix, are found by a cold
// lookup, and can be renamed and removed without touching the original.
func TestSyncConflictLongName(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	long := strings.Repeat("long name ", 20) + ".txt"
	must(t, os.WriteFile(filepath.Join(v.Mnt, long), []byte("v1"), 0o644))
	must(t, v.Srv.Unmount())
	var entry string
	for _, p := range mounttest.BackingFiles(t, v.Cipher) {
		entry = p
	}
	ents, err := os.ReadDir(v.Cipher)
	must(t, err)
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, "encryptfs.long.") && !strings.HasSuffix(n, ".name") {
			entry = filepath.Join(v.Cipher, n)
		}
	}
	if entry == "" {
		t.Fatalf("no long-name entry in %v", ents)
	}
	data, err := os.ReadFile(entry)
	must(t, err)
	h := strings.TrimPrefix(filepath.Base(entry), "encryptfs.long.")
	const sync = ".sync-conflict-20261122-101010-ABCDEFG"
	must(t, os.WriteFile(entry+" (1)", data, 0o644))
	must(t, os.WriteFile(filepath.Join(v.Cipher, "encryptfs.long"+sync+"."+h), data, 0o644))

	v.Remount(t) // cold lookups first
	for _, name := range []string{long + " (1)", long + sync} {
		if got, err := os.ReadFile(filepath.Join(v.Mnt, name)); err != nil || string(got) != "v1" {
			t.Fatalf("read %q: %q %v", name, got, err)
		}
	}
	want := []string{long, long + " (1)", long + sync}
	slices.Sort(want)
	if names := listNames(t, v.Mnt); !slices.Equal(names, want) {
		t.Fatalf("listing %q, want %q", names, want)
	}
	must(t, os.Rename(filepath.Join(v.Mnt, long+" (1)"), filepath.Join(v.Mnt, "kept.txt")))
	must(t, os.Remove(filepath.Join(v.Mnt, long+sync)))
	if names := listNames(t, v.Mnt); !slices.Equal(names, []string{"kept.txt", long}) {
		t.Fatalf("listing after cleanup %q", names)
	}
	v.Remount(t)
	for _, name := range []string{long, "kept.txt"} {
		if got, err := os.ReadFile(filepath.Join(v.Mnt, name)); err != nil || string(got) != "v1" {
			t.Fatalf("read %q after cleanup: %q %v", name, got, err)
		}
	}
}
