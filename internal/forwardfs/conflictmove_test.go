package forwardfs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"golang.org/x/sys/unix"
)

// TestSyncConflictOfKnownFile: Syncthing makes a conflict copy by renaming
// the file it replaces to "<encname>.sync-conflict-…" and putting the
// winner in its place, while the mount still knows the old file (same
// backing inode) under the ordinary name. The copy must read back the old
// contents under its own name, and the ordinary name the new ones; the
// mount used to find the copy's inode already known as "note.txt", resolve
// it through that stale name, and answer ENOENT.
func TestSyncConflictOfKnownFile(t *testing.T) {
	v := mounttest.NewVault(t, func(o *mount.Options) { o.SharedStorage = true })
	p := filepath.Join(v.Mnt, "note.txt")
	must(t, os.WriteFile(p, []byte("old"), 0o644))
	if got, err := os.ReadFile(p); err != nil || string(got) != "old" {
		t.Fatalf("read: %q %v", got, err)
	}
	bf := mounttest.BackingFiles(t, v.Cipher)
	if len(bf) != 1 {
		t.Fatalf("backing %v", bf)
	}
	const suffix = ".sync-conflict-20261123-142758-3M2RA5Q"
	must(t, os.Rename(bf[0], bf[0]+suffix))

	// The mount still knows the old inode as note.txt; the copy is found
	// first (before note.txt is looked up again) and after.
	if got, err := os.ReadFile(p + suffix); err != nil || string(got) != "old" {
		t.Fatalf("conflict copy of a known file: %q, %v", got, err)
	}
	// The winner, written as note.txt on the other device (so bound to
	// note.txt's place in a bound vault), arrives in a temporary file
	// and is renamed into place, as Syncthing does.
	tmp := filepath.Join(v.Cipher, ".syncthing.note.tmp")
	writeAs(t, v, "note.txt", tmp, "new")
	must(t, os.Rename(tmp, bf[0]))
	if got, err := os.ReadFile(p); err != nil || string(got) != "new" {
		t.Fatalf("note.txt after the sync: %q, %v", got, err)
	}
	if got, err := os.ReadFile(p + suffix); err != nil || string(got) != "old" {
		t.Fatalf("conflict copy after note.txt was replaced: %q, %v", got, err)
	}
	ents, err := os.ReadDir(v.Mnt)
	must(t, err)
	for _, e := range ents {
		if _, err := os.ReadFile(filepath.Join(v.Mnt, e.Name())); err != nil {
			t.Errorf("read %s after readdir: %v", e.Name(), err)
		}
	}
}

// TestDirIDConflict: two copies of a vault (as two machines a sync tool
// keeps in step) each make directory "same" while apart, with files in
// it. Both directories encrypt to one backing name, each with its own ID;
// the sync tool merges them, keeping one encryptfs.dirid and renaming the
// other "encryptfs.sync-conflict-…-DEVICE.dirid" (Syncthing puts its
// suffix before the extension). No entry may be lost, whichever side's ID
// wins, also while the mount (--shared-storage) knows "same" under its
// old ID: the losing side's files are shown as "<name><suffix>", read
// back, and renaming one adopts it; fsck finds the vault clean, listing
// the copies as conflicts.
func TestDirIDConflict(t *testing.T) {
	for _, winner := range []string{"a", "b"} {
		t.Run(winner+" wins", func(t *testing.T) { testDirIDConflict(t, winner, mounttest.NewVault) })
	}
}

func testDirIDConflict(t *testing.T, winner string, newVault func(testing.TB, func(*mount.Options)) *mounttest.Vault) {
	shared := func(o *mount.Options) { o.SharedStorage = true }
	va := newVault(t, shared)
	must(t, va.Srv.Unmount())
	vb := *va
	vb.Cipher, vb.Mnt = t.TempDir(), t.TempDir()
	if out, err := exec.Command("cp", "-a", va.Cipher+"/.", vb.Cipher).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	va.MountAgain(t, shared)
	mounttest.Track(vb.Mnt)
	vb.MountAgain(t, nil)
	t.Cleanup(func() { vb.Srv.Unmount() })
	for _, s := range []struct{ name, mnt string }{{"a", va.Mnt}, {"b", vb.Mnt}} {
		must(t, os.Mkdir(filepath.Join(s.mnt, "same"), 0o755))
		must(t, os.WriteFile(filepath.Join(s.mnt, "same", "from-"+s.name), []byte("made on "+s.name), 0o644))
		must(t, os.WriteFile(filepath.Join(s.mnt, "same", "both"), []byte("both on "+s.name), 0o644))
	}
	must(t, vb.Srv.Unmount())
	if _, err := os.ReadDir(filepath.Join(va.Mnt, "same")); err != nil { // known to the mount before the merge
		t.Fatal(err)
	}

	// Merge b's "same" into a's as Syncthing does: one dirid wins, the
	// other is renamed aside, b's entries are added (their backing names
	// differ from a's, "both" too: names are encrypted under the
	// directory's ID).
	const suffix = ".sync-conflict-20261123-142915-LUIK4K3"
	var sameB string
	for _, p := range mounttest.BackingFiles(t, vb.Cipher) {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			sameB = p
		}
	}
	sameA := filepath.Join(va.Cipher, filepath.Base(sameB))
	aside := "encryptfs" + suffix + ".dirid"
	if winner == "b" {
		must(t, os.Rename(filepath.Join(sameA, "encryptfs.dirid"), filepath.Join(sameA, aside)))
		aside = "encryptfs.dirid"
	}
	ents, err := os.ReadDir(sameB)
	must(t, err)
	for _, e := range ents {
		dst := filepath.Join(sameA, e.Name())
		if e.Name() == "encryptfs.dirid" {
			dst = filepath.Join(sameA, aside)
		} else if _, err := os.Lstat(dst); err == nil {
			t.Fatalf("%s is in both copies: names depend on the directory's ID", e.Name())
		}
		if out, err := exec.Command("cp", "-a", filepath.Join(sameB, e.Name()), dst).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	}

	loser := map[string]string{"a": "b", "b": "a"}[winner]
	dir := filepath.Join(va.Mnt, "same")
	want := map[string]string{
		"from-" + winner:         "made on " + winner,
		"both":                   "both on " + winner,
		"from-" + loser + suffix: "made on " + loser,
		"both" + suffix:          "both on " + loser,
	}
	ents, err = os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != len(want) {
		t.Errorf("listing %q, want %d names", names, len(want))
	}
	for name, content := range want {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != content {
			t.Errorf("%s: %q, %v; listing %q", name, got, err, names)
		}
	}
	lost := filepath.Join(dir, "from-"+loser+suffix)
	if err := os.WriteFile(lost, []byte("x"), 0o644); err == nil {
		t.Error("an entry of the losing ID is writable in place")
	}
	must(t, os.Rename(lost, filepath.Join(dir, "from-"+loser)))
	if got, err := os.ReadFile(filepath.Join(dir, "from-"+loser)); err != nil || string(got) != "made on "+loser {
		t.Fatalf("adopted from-%s: %q, %v", loser, got, err)
	}
	must(t, va.Srv.Unmount())
	rep, err := fsck.Check(context.Background(), va.Session(t), fsck.Options{})
	must(t, err)
	if !rep.Clean || len(rep.Conflicts) != 2 {
		t.Fatalf("fsck after the merge: clean %v, problems %+v, conflicts %+v", rep.Clean, rep.Problems, rep.Conflicts)
	}
	va.MountAgain(t, nil)
}

// writeAs writes data, encrypted as the contents of the root's entry name
// (bound to that place in a bound vault), to the backing file at path,
// with a session of its own: what another device of the vault writes.
func writeAs(t *testing.T, v *mounttest.Vault, name, path, data string) {
	t.Helper()
	s := v.Session(t)
	rootfd, err := backing.OpenRoot(v.Cipher)
	must(t, err)
	defer backing.Close(rootfd)
	rootID, err := s.Tree().DirIDs().ReadRoot(rootfd)
	must(t, err)
	n, err := s.Tree().Name(rootID, name)
	must(t, err)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o644)
	must(t, err)
	bf := backing.NewFile(fd, nil)
	defer bf.Close()
	f, err := s.Engine().OpenAt(bf, s.Tree().Place(rootID, n))
	must(t, err)
	_, err = f.WriteAt([]byte(data), 0)
	must(t, err)
	must(t, f.Close())
	must(t, bf.Sync())
}
