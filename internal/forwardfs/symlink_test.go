package forwardfs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
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

// direntIno returns the d_ino readdir gives name in dir.
func direntIno(t *testing.T, dir, name string) uint64 {
	t.Helper()
	ino, ok := direntInos(t, dir)[name]
	if !ok {
		t.Fatalf("%s not listed in %s", name, dir)
	}
	return ino
}

// direntInos lists dir with getdents: name -> d_ino.
func direntInos(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	f, err := os.Open(dir)
	must(t, err)
	defer f.Close()
	inos := map[string]uint64{}
	buf := make([]byte, 1<<16)
	for {
		n, err := unix.ReadDirent(int(f.Fd()), buf)
		must(t, err)
		if n == 0 {
			return inos
		}
		for b := buf[:n]; len(b) > 0; {
			ino, reclen := direntField(b, 0, 8), direntField(b, 16, 2)
			name := b[19:reclen]
			if i := strings.IndexByte(string(name), 0); i >= 0 {
				name = name[:i]
			}
			inos[string(name)] = ino
			b = b[reclen:]
		}
	}
}

// direntField reads a little-endian field of size bytes at off.
func direntField(b []byte, off, size int) uint64 {
	var v uint64
	for i := size - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[off+i])
	}
	return v
}

// TestSymlinkInodeNumbers: a symlink shows its backing inode number, as
// every other entry does: the same on every mount and the same as
// readdir's d_ino. After a rename (which re-creates the backing link) it
// keeps its number for as long as the kernel knows it, also when every
// access looks it up again (SharedStorage: no kernel caching); a new
// symlink that gets the old backing number is a node of its own.
func TestSymlinkInodeNumbers(t *testing.T) {
	v := mounttest.NewVault(t, func(o *mount.Options) { o.SharedStorage = true })
	shared := func(o *mount.Options) { o.SharedStorage = true }
	a, b := filepath.Join(v.Mnt, "a"), filepath.Join(v.Mnt, "b")
	must(t, os.Symlink("target-a", a))
	must(t, os.Symlink("target-b", b))
	inoA, inoB := lstat(t, a).Ino, lstat(t, b).Ino
	for _, p := range mounttest.BackingFiles(t, v.Cipher) {
		st := lstat(t, p)
		if st.Mode&unix.S_IFMT == unix.S_IFLNK && st.Ino != inoA && st.Ino != inoB {
			t.Errorf("backing link %s has inode %d; the mount shows %d and %d", p, st.Ino, inoA, inoB)
		}
	}
	if d := direntIno(t, v.Mnt, "a"); d != inoA {
		t.Errorf("d_ino %d, st_ino %d", d, inoA)
	}
	v.RemountWith(t, shared)
	// Looked up in the other order than before.
	if gotB, gotA := lstat(t, b).Ino, lstat(t, a).Ino; gotA != inoA || gotB != inoB {
		t.Errorf("after a remount: inodes %d %d, want %d %d", gotA, gotB, inoA, inoB)
	}

	a2 := filepath.Join(v.Mnt, "a2")
	must(t, os.Rename(a, a2))
	for i := range 3 {
		if got := lstat(t, a2).Ino; got != inoA {
			t.Errorf("renamed, stat %d: inode %d, want %d", i, got, inoA)
		}
	}
	if d := direntIno(t, v.Mnt, "a2"); d != inoA {
		t.Errorf("renamed: d_ino %d, st_ino %d", d, inoA)
	}
	// New symlinks may get a's old backing number; each must read its own
	// target, not a2's.
	for i := range 8 {
		p := filepath.Join(v.Mnt, "new"+string(rune('0'+i)))
		want := "target-new" + string(rune('0'+i))
		must(t, os.Symlink(want, p))
		if got, err := os.Readlink(p); err != nil || got != want {
			t.Errorf("new symlink %d: readlink %q, %v; want %q (ino %d)", i, got, err, want, lstat(t, p).Ino)
		}
	}
	if got, err := os.Readlink(a2); err != nil || got != "target-a" {
		t.Errorf("renamed symlink: readlink %q, %v", got, err)
	}
	if got := lstat(t, a2).Ino; got != inoA {
		t.Errorf("renamed, after new symlinks: inode %d, want %d", got, inoA)
	}
}
