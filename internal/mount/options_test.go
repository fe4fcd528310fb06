package mount_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"golang.org/x/sys/unix"
)

// TestMountEntry: /proc/mounts shows type fuse.encryptfs with CIPHERDIR as
// the source, and no default_permissions without allow_other (only the
// mounting user can reach the mount; TestOwnership checks the allow_other
// case); statfs reports the plaintext name limit.
func TestMountEntry(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	b, err := os.ReadFile("/proc/mounts")
	must(t, err)
	found := false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && f[1] == v.Mnt {
			found = true
			if f[0] != v.Cipher || f[2] != "fuse.encryptfs" || strings.Contains(l, "default_permissions") {
				t.Errorf("mount entry %q", l)
			}
		}
	}
	if !found {
		t.Fatal("mount not in /proc/mounts")
	}
	var st unix.Statfs_t
	must(t, unix.Statfs(v.Mnt, &st))
	if st.Namelen != 255 || st.Blocks == 0 {
		t.Errorf("statfs %+v", st)
	}
}

// TestReadOnly: a read-only mount reads and refuses writes.
func TestReadOnly(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	must(t, os.WriteFile(filepath.Join(v.Mnt, "f"), []byte("data"), 0o644))
	must(t, v.Srv.Unmount())
	v.MountAgain(t, func(o *mount.Options) { o.ReadOnly = true })
	if b, err := os.ReadFile(filepath.Join(v.Mnt, "f")); err != nil || string(b) != "data" {
		t.Fatalf("read: %q %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(v.Mnt, "g"), nil, 0o644); !errors.Is(err, unix.EROFS) {
		t.Fatalf("create on ro mount: %v", err)
	}
}

// TestOwnership: a file created by another user through an allow_other
// mount belongs to that user, in the mount and in CIPHERDIR.
func TestOwnership(t *testing.T) {
	mounttest.RequireRoot(t)
	v := mounttest.NewVault(t, func(o *mount.Options) {
		o.AllowOther = true
		o.MountPoint = mounttest.SearchableDir(t)
	})
	must(t, os.Chmod(v.Mnt, 0o777))
	mounts, err := os.ReadFile("/proc/mounts")
	must(t, err)
	for _, l := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[1] == v.Mnt && !strings.Contains(f[3], "default_permissions") {
			t.Fatalf("allow_other mount without default_permissions: %q", l)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", "echo hi > "+v.Mnt+"/mine && mkdir "+v.Mnt+"/mydir")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid 65534: %v: %s", err, out)
	}
	for _, name := range []string{"mine", "mydir"} {
		var st unix.Stat_t
		must(t, unix.Stat(filepath.Join(v.Mnt, name), &st))
		if st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("%s owned by %d:%d", name, st.Uid, st.Gid)
		}
	}
	for _, p := range mounttest.BackingFiles(t, v.Cipher) {
		var st unix.Stat_t
		must(t, unix.Lstat(p, &st))
		if st.Uid != 65534 {
			t.Errorf("backing %s owned by %d", p, st.Uid)
		}
	}
	// Other users cannot write a root-owned 0644 file (default_permissions).
	must(t, os.WriteFile(filepath.Join(v.Mnt, "rootfile"), nil, 0o644))
	cmd = exec.Command("/bin/sh", "-c", "echo x >> "+v.Mnt+"/rootfile")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Errorf("write to root's file as uid 65534: %v %s", err, out)
	}
}
