package mount

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMountEntry: /proc/mounts shows type fuse.encryptfs with CIPHERDIR as
// the source, and no default_permissions without allow_other (only the
// mounting user can reach the mount; TestOwnership checks the allow_other
// case); statfs reports the plaintext name limit.
func TestMountEntry(t *testing.T) {
	v := newVault(t, nil)
	b, err := os.ReadFile("/proc/mounts")
	must(t, err)
	found := false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && f[1] == v.mnt {
			found = true
			if f[0] != v.cipher || f[2] != "fuse.encryptfs" || strings.Contains(l, "default_permissions") {
				t.Errorf("mount entry %q", l)
			}
		}
	}
	if !found {
		t.Fatal("mount not in /proc/mounts")
	}
	var st unix.Statfs_t
	must(t, unix.Statfs(v.mnt, &st))
	if st.Namelen != 255 || st.Blocks == 0 {
		t.Errorf("statfs %+v", st)
	}
}

// TestReadOnly: a read-only mount reads and refuses writes.
func TestReadOnly(t *testing.T) {
	v := newVault(t, nil)
	must(t, os.WriteFile(filepath.Join(v.mnt, "f"), []byte("data"), 0o644))
	must(t, v.srv.Unmount())
	srv, err := Mount(Options{Session: v.session(t), MountPoint: v.mnt, ReadOnly: true})
	must(t, err)
	v.srv = srv
	if b, err := os.ReadFile(filepath.Join(v.mnt, "f")); err != nil || string(b) != "data" {
		t.Fatalf("read: %q %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(v.mnt, "g"), nil, 0o644); !errors.Is(err, unix.EROFS) {
		t.Fatalf("create on ro mount: %v", err)
	}
}

// TestOwnership: a file created by another user through an allow_other
// mount belongs to that user, in the mount and in CIPHERDIR.
func TestOwnership(t *testing.T) {
	requireRoot(t)
	v := newVault(t, func(o *Options) {
		o.AllowOther = true
		o.MountPoint = searchableDir(t)
	})
	must(t, os.Chmod(v.mnt, 0o777))
	mounts, err := os.ReadFile("/proc/mounts")
	must(t, err)
	for _, l := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[1] == v.mnt && !strings.Contains(f[3], "default_permissions") {
			t.Fatalf("allow_other mount without default_permissions: %q", l)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", "echo hi > "+v.mnt+"/mine && mkdir "+v.mnt+"/mydir")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid 65534: %v: %s", err, out)
	}
	for _, name := range []string{"mine", "mydir"} {
		var st unix.Stat_t
		must(t, unix.Stat(filepath.Join(v.mnt, name), &st))
		if st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("%s owned by %d:%d", name, st.Uid, st.Gid)
		}
	}
	for _, p := range backingFiles(t, v.cipher) {
		var st unix.Stat_t
		must(t, unix.Lstat(p, &st))
		if st.Uid != 65534 {
			t.Errorf("backing %s owned by %d", p, st.Uid)
		}
	}
	// Other users cannot write a root-owned 0644 file (default_permissions).
	must(t, os.WriteFile(filepath.Join(v.mnt, "rootfile"), nil, 0o644))
	cmd = exec.Command("/bin/sh", "-c", "echo x >> "+v.mnt+"/rootfile")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Errorf("write to root's file as uid 65534: %v %s", err, out)
	}
}

// TestSignalUnmount: SIGTERM unmounts cleanly.
func TestSignalUnmount(t *testing.T) {
	v := newVault(t, nil)
	stop := v.srv.UnmountOnSignal()
	defer stop()
	must(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	done := make(chan struct{})
	go func() { v.srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("not unmounted after SIGTERM")
	}
	if !strings.Contains(v.log.String(), "unmounting") {
		t.Errorf("log: %q", v.log.String())
	}
}

// TestSyncConflictCopy: a sync tool's conflict copy "<encname> (1)" in
// CIPHERDIR shows up as "<name> (1)" and can be read, renamed and removed.
func TestSyncConflictCopy(t *testing.T) {
	v := newVault(t, nil)
	must(t, os.WriteFile(filepath.Join(v.mnt, "report.txt"), []byte("v1"), 0o644))
	bf := backingFiles(t, v.cipher)
	if len(bf) != 1 {
		t.Fatalf("backing %v", bf)
	}
	b, err := os.ReadFile(bf[0])
	must(t, err)
	must(t, os.WriteFile(bf[0]+" (1)", b, 0o644))
	ents, err := os.ReadDir(v.mnt)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "report.txt,report.txt (1)" && strings.Join(names, ",") != "report.txt (1),report.txt" {
		t.Fatalf("listing %v", names)
	}
	remount(t, v) // cold lookup, not through readdirplus
	conflict := filepath.Join(v.mnt, "report.txt (1)")
	if got, err := os.ReadFile(conflict); err != nil || string(got) != "v1" {
		t.Fatalf("read conflict copy: %q %v", got, err)
	}
	must(t, os.Rename(conflict, filepath.Join(v.mnt, "kept.txt")))
	if got, err := os.ReadFile(filepath.Join(v.mnt, "kept.txt")); err != nil || string(got) != "v1" {
		t.Fatalf("read renamed copy: %q %v", got, err)
	}
	must(t, os.Remove(filepath.Join(v.mnt, "kept.txt")))
	if left := backingFiles(t, v.cipher); len(left) != 1 {
		t.Fatalf("backing left %v", left)
	}
}

// TestSyncConflictDir: a conflict copy of a directory "<encname> (1)"
// (with its dirid inside) shows up as "<name> (1)", and its entries are
// reachable on a cold mount, where the directory is opened from the root
// by path: a conflict copy's backing name is not the encryption of its
// displayed name, so that path is found through the parent instead.
func TestSyncConflictDir(t *testing.T) {
	v := newVault(t, nil)
	must(t, os.MkdirAll(filepath.Join(v.mnt, "a", "docs"), 0o755))
	must(t, os.WriteFile(filepath.Join(v.mnt, "a", "docs", "f"), []byte("in copy"), 0o644))
	must(t, v.srv.Unmount())
	top := backingFiles(t, v.cipher)
	if len(top) != 1 {
		t.Fatalf("backing %v", top)
	}
	sub := backingFiles(t, top[0])
	if len(sub) != 1 {
		t.Fatalf("backing %v", sub)
	}
	if out, err := exec.Command("cp", "-a", sub[0], sub[0]+" (1)").CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	remount(t, v)
	if got, err := os.ReadFile(filepath.Join(v.mnt, "a", "docs (1)", "f")); err != nil || string(got) != "in copy" {
		t.Fatalf("read in conflict copy dir: %q %v", got, err)
	}
}

// TestSyncConflictLongName: copies of a long-name entry made by sync tools,
// with the suffix appended ("encryptfs.long.<H> (1)") or put before the
// hash as if it were an extension ("encryptfs.long.sync-conflict-….<H>"),
// show up with the original's name plus the suffix, are found by a cold
// lookup, and can be renamed and removed without touching the original.
func TestSyncConflictLongName(t *testing.T) {
	v := newVault(t, nil)
	long := strings.Repeat("long name ", 20) + ".txt"
	must(t, os.WriteFile(filepath.Join(v.mnt, long), []byte("v1"), 0o644))
	must(t, v.srv.Unmount())
	var entry string
	for _, p := range backingFiles(t, v.cipher) {
		entry = p
	}
	ents, err := os.ReadDir(v.cipher)
	must(t, err)
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, "encryptfs.long.") && !strings.HasSuffix(n, ".name") {
			entry = filepath.Join(v.cipher, n)
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
	must(t, os.WriteFile(filepath.Join(v.cipher, "encryptfs.long"+sync+"."+h), data, 0o644))

	remount(t, v) // cold lookups first
	for _, name := range []string{long + " (1)", long + sync} {
		if got, err := os.ReadFile(filepath.Join(v.mnt, name)); err != nil || string(got) != "v1" {
			t.Fatalf("read %q: %q %v", name, got, err)
		}
	}
	want := []string{long, long + " (1)", long + sync}
	slices.Sort(want)
	if names := listNames(t, v.mnt); !slices.Equal(names, want) {
		t.Fatalf("listing %q, want %q", names, want)
	}
	must(t, os.Rename(filepath.Join(v.mnt, long+" (1)"), filepath.Join(v.mnt, "kept.txt")))
	must(t, os.Remove(filepath.Join(v.mnt, long+sync)))
	if names := listNames(t, v.mnt); !slices.Equal(names, []string{"kept.txt", long}) {
		t.Fatalf("listing after cleanup %q", names)
	}
	remount(t, v)
	for _, name := range []string{long, "kept.txt"} {
		if got, err := os.ReadFile(filepath.Join(v.mnt, name)); err != nil || string(got) != "v1" {
			t.Fatalf("read %q after cleanup: %q %v", name, got, err)
		}
	}
}
