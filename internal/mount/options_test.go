package mount

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
