package forwardfs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// lstat is unix.Lstat that fails t on an error.
func lstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(p, &st))
	return st
}

// setLinkTimes sets a symlink's own atime and mtime (AT_SYMLINK_NOFOLLOW).
func setLinkTimes(t *testing.T, p string, atime, mtime unix.Timespec) {
	t.Helper()
	must(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{atime, mtime}, unix.AT_SYMLINK_NOFOLLOW))
}

var (
	atime2001 = unix.Timespec{Sec: 978307200, Nsec: 123}  // 2001-01-01
	mtime2002 = unix.Timespec{Sec: 1009843200, Nsec: 456} // 2002-01-01
)

// TestSymlinkAtimeSticks: a symlink's atime set with utimensat stays what
// was set through lookups, lstat and listings, right away and after a
// remount (which empties the kernel's attribute cache, so the daemon is
// asked). Reading the backing link to size the answer moved it (relatime
// updates an atime older than a day on every read).
func TestSymlinkAtimeSticks(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	for _, target := range []string{"target", strings.Repeat("long/", 700)} { // inline and sidecar
		p := filepath.Join(v.Mnt, "link"+string(rune('0'+len(target)%10)))
		must(t, os.Symlink(target, p))
		setLinkTimes(t, p, atime2001, mtime2002)
		check := func(when string) {
			t.Helper()
			st := lstat(t, p)
			if st.Atim != atime2001 || st.Mtim != mtime2002 {
				t.Errorf("%s: atime %v mtime %v, want %v %v", when, st.Atim, st.Mtim, atime2001, mtime2002)
			}
			if st.Size != int64(len(target)) {
				t.Errorf("%s: size %d, want %d", when, st.Size, len(target))
			}
		}
		check("right away")
		v.Remount(t)
		check("after a remount")
		ents, err := os.ReadDir(v.Mnt) // READDIRPLUS looks entries up
		must(t, err)
		for _, e := range ents {
			lstat(t, filepath.Join(v.Mnt, e.Name()))
		}
		v.Remount(t)
		check("after a listing and a remount")
	}
}

// TestSymlinkRenameKeepsOwnerAndTimes: rename(2) keeps a symlink's owner,
// atime and mtime, though the backing link is re-created (its target is
// bound to its name). A remount shows what the backing store kept; the
// kernel's attribute cache hides a loss until then.
func TestSymlinkRenameKeepsOwnerAndTimes(t *testing.T) {
	mounttest.RequireRoot(t)
	v := mounttest.NewVault(t, nil)
	must(t, os.Mkdir(filepath.Join(v.Mnt, "sub"), 0o755))
	p := filepath.Join(v.Mnt, "L")
	must(t, os.Symlink("target", p))
	must(t, os.Lchown(p, 65534, 65533))
	setLinkTimes(t, p, atime2001, mtime2002)
	check := func(when, p string) {
		t.Helper()
		st := lstat(t, p)
		if st.Uid != 65534 || st.Gid != 65533 {
			t.Errorf("%s: owner %d:%d, want 65534:65533", when, st.Uid, st.Gid)
		}
		if st.Atim != atime2001 || st.Mtim != mtime2002 {
			t.Errorf("%s: atime %v mtime %v, want %v %v", when, st.Atim, st.Mtim, atime2001, mtime2002)
		}
	}
	p2 := filepath.Join(v.Mnt, "L2")
	must(t, os.Rename(p, p2))
	v.Remount(t)
	check("renamed, after a remount", p2)
	p3 := filepath.Join(v.Mnt, "sub", "L3")
	must(t, os.Rename(p2, p3))
	v.Remount(t)
	check("moved to another directory, after a remount", p3)
	if got, err := os.Readlink(p3); err != nil || got != "target" {
		t.Errorf("readlink: %q, %v", got, err)
	}
}
