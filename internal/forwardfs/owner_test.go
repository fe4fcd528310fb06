package forwardfs_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
)

// TestForceOwner: with ForceOwner every entry (root, directory, file,
// symlink, new or old) shows that uid and gid, while the backing entries
// keep their real owner.
func TestForceOwner(t *testing.T) {
	mounttest.RequireRoot(t)
	v := mounttest.NewVault(t, func(o *mount.Options) {
		o.ForceOwner = &mount.Owner{UID: 1234, GID: 5678}
		o.AllowOther = true
		o.MountPoint = mounttest.SearchableDir(t)
	})
	must(t, os.Mkdir(filepath.Join(v.Mnt, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(v.Mnt, "d", "f"), []byte("x"), 0o644))
	must(t, os.Symlink("f", filepath.Join(v.Mnt, "d", "l")))
	for _, p := range []string{"", "d", "d/f", "d/l"} {
		var st syscall.Stat_t
		must(t, syscall.Lstat(filepath.Join(v.Mnt, p), &st))
		if st.Uid != 1234 || st.Gid != 5678 {
			t.Errorf("%q: owner %d:%d, want 1234:5678", p, st.Uid, st.Gid)
		}
	}
	for _, p := range mounttest.BackingFiles(t, v.Cipher) {
		var st syscall.Stat_t
		must(t, syscall.Lstat(p, &st))
		if st.Uid != 0 || st.Gid != 0 {
			t.Errorf("backing %s: owner %d:%d, want the real 0:0", p, st.Uid, st.Gid)
		}
	}
}
