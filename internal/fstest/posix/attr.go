package posix

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testChmod: every permission bit is kept exactly; chmod changes ctime only.
func testChmod(t *testing.T, e *env) {
	f, d := e.p("f"), e.p("d")
	mkfile(t, f, 0o644, []byte("x"))
	mkdir(t, d, 0o755)
	for _, mode := range []uint32{0o000, 0o111, 0o151, 0o444, 0o600, 0o755, 0o777, 0o1777, 0o2755, 0o4755, 0o7777} {
		ok(t, unix.Chmod(f, mode), "chmod file")
		wantMode(t, f, unix.S_IFREG, mode)
		ok(t, unix.Chmod(d, mode), "chmod dir")
		wantMode(t, d, unix.S_IFDIR, mode)
	}
	checkTimes(t, "chmod file", func() { ok(t, unix.Chmod(f, 0o640), "chmod") }, tw{f, false, true}, tw{e.dir, false, false})
	checkTimes(t, "chmod dir", func() { ok(t, unix.Chmod(d, 0o750), "chmod") }, tw{d, false, true})

	// Through a descriptor, and through a symlink (which follows it).
	fd, err := unix.Open(f, unix.O_RDONLY, 0)
	ok(t, err, "open")
	ok(t, unix.Fchmod(fd, 0o604), "fchmod")
	unix.Close(fd)
	wantMode(t, f, unix.S_IFREG, 0o604)
	ok(t, unix.Symlink("f", e.p("l")), "symlink")
	ok(t, unix.Chmod(e.p("l"), 0o600), "chmod via symlink")
	wantMode(t, f, unix.S_IFREG, 0o600)
	wantMode(t, e.p("l"), unix.S_IFLNK, 0o777)

	wantErrno(t, unix.Chmod(e.p("missing"), 0o644), "chmod missing", unix.ENOENT)
	wantErrno(t, unix.Chmod(e.p("f", "x"), 0o644), "chmod under a file", unix.ENOTDIR)
	wantErrno(t, unix.Chmod(e.p(name('c', 256)), 0o644), "chmod 256-byte name", unix.ENAMETOOLONG)
}

// testChown: ownership changes, ctime, set-id bits cleared on files, lchown
// on the link itself.
func testChown(t *testing.T, e *env) {
	skipIf(t, e.opts.NoChown, "NoChown")
	needRoot(t)
	f, d := e.p("f"), e.p("d")
	mkfile(t, f, 0o644, []byte("x"))
	mkdir(t, d, 0o755)
	for _, id := range [][2]int{{65534, 65534}, {123, 456}, {0, 65534}, {0, 0}} {
		for _, p := range []string{f, d} {
			ok(t, unix.Chown(p, id[0], id[1]), "chown")
			if st := lstat(t, p); int(st.Uid) != id[0] || int(st.Gid) != id[1] {
				t.Errorf("chown %s to %d:%d: got %d:%d", p, id[0], id[1], st.Uid, st.Gid)
			}
		}
	}
	checkTimes(t, "chown", func() { ok(t, unix.Chown(f, 65534, 65534), "chown") }, tw{f, false, true}, tw{e.dir, false, false})

	// Only the group changes with uid -1.
	ok(t, unix.Chown(f, -1, 100), "chown -1:100")
	if st := lstat(t, f); st.Uid != 65534 || st.Gid != 100 {
		t.Errorf("chown -1:100: got %d:%d", st.Uid, st.Gid)
	}

	// Changing the owner of a regular file clears S_ISUID and S_ISGID
	// (group-executable), even for root; a directory keeps them.
	ok(t, unix.Chmod(f, 0o6755), "chmod 6755")
	ok(t, unix.Chown(f, 0, 0), "chown suid file")
	wantMode(t, f, unix.S_IFREG, 0o755)
	ok(t, unix.Chmod(d, 0o2755), "chmod 2755 dir")
	ok(t, unix.Chown(d, 65534, 65534), "chown sgid dir")
	wantMode(t, d, unix.S_IFDIR, 0o2755)

	// lchown changes the link, chown the target.
	ok(t, unix.Symlink("f", e.p("l")), "symlink")
	ok(t, unix.Lchown(e.p("l"), 65534, 65534), "lchown")
	if st := lstat(t, e.p("l")); st.Uid != 65534 || st.Gid != 65534 {
		t.Errorf("lchown: link owner %d:%d", st.Uid, st.Gid)
	}
	if st := lstat(t, f); st.Uid != 0 {
		t.Errorf("lchown changed the target's owner to %d", st.Uid)
	}
	ok(t, unix.Chown(e.p("l"), 123, 123), "chown via symlink")
	if st := lstat(t, f); st.Uid != 123 {
		t.Errorf("chown via symlink: target uid %d, want 123", st.Uid)
	}

	fd, err := unix.Open(f, unix.O_RDONLY, 0)
	ok(t, err, "open")
	ok(t, unix.Fchown(fd, 7, 8), "fchown")
	unix.Close(fd)
	if st := lstat(t, f); st.Uid != 7 || st.Gid != 8 {
		t.Errorf("fchown: %d:%d", st.Uid, st.Gid)
	}
	wantErrno(t, unix.Chown(e.p("missing"), 0, 0), "chown missing", unix.ENOENT)
}

// testTruncate: grow reads zeros, shrink drops data for good, times, errnos.
func testTruncate(t *testing.T, e *env) {
	f := e.p("f")
	data := bytes.Repeat([]byte("0123456789abcdef"), 8192) // 128 KiB
	mkfile(t, f, 0o644, data)

	// Truncate to the current size may or may not touch the times (POSIX
	// requires the update only "if the file size is changed").
	ok(t, unix.Truncate(f, int64(len(data))), "truncate to same size")
	for _, size := range []int64{200000, 65536, 65537, 4095, 1, 0, 1 << 20, 12345} {
		checkTimes(t, "truncate to "+strconv.FormatInt(size, 10), func() { ok(t, unix.Truncate(f, size), "truncate") }, tw{f, true, true}, tw{e.dir, false, false})
		if st := lstat(t, f); st.Size != size {
			t.Errorf("truncate %d: size %d", size, st.Size)
		}
	}
	// After shrinking to 0 and growing, everything reads as zeros.
	if got := readFile(t, f); !bytes.Equal(got, make([]byte, 12345)) {
		t.Errorf("truncate shrink then grow: old data visible")
	}

	// ftruncate through a descriptor, and keep data below the cut.
	ok(t, os.WriteFile(f, data, 0o644), "rewrite")
	fd, err := unix.Open(f, unix.O_RDWR, 0)
	ok(t, err, "open")
	ok(t, unix.Ftruncate(fd, 70000), "ftruncate shrink")
	ok(t, unix.Ftruncate(fd, 140000), "ftruncate grow")
	unix.Close(fd)
	want := append(append([]byte{}, data[:70000]...), make([]byte, 70000)...)
	if got := readFile(t, f); !bytes.Equal(got, want) {
		t.Errorf("ftruncate shrink/grow: contents differ")
	}

	fd, err = unix.Open(f, unix.O_RDONLY, 0)
	ok(t, err, "open")
	wantErrno(t, unix.Ftruncate(fd, 0), "ftruncate O_RDONLY fd", unix.EINVAL, unix.EBADF)
	unix.Close(fd)
	wantErrno(t, unix.Truncate(f, -1), "truncate negative", unix.EINVAL)
	wantErrno(t, unix.Truncate(e.dir, 0), "truncate directory", unix.EISDIR)
	wantErrno(t, unix.Truncate(e.p("missing"), 0), "truncate missing", unix.ENOENT)
	wantErrno(t, unix.Truncate(e.p("f", "x"), 0), "truncate under a file", unix.ENOTDIR)

	// pjdfstest truncate/12: a length past the largest file is EFBIG; one
	// the file system takes (999999999999999 is below 1 PiB) gives that
	// size, at once, and the file stays usable. It used to kill an
	// EncryptFS daemon with file roots (issue 18: the whole tag table was
	// allocated).
	const huge = 999999999999999
	t0 := time.Now()
	if err := unix.Truncate(f, huge); err == nil {
		if st := lstat(t, f); st.Size != huge {
			t.Errorf("truncate %d: size %d", int64(huge), st.Size)
		}
	} else if err != unix.EFBIG {
		t.Errorf("truncate %d: %v, want success or EFBIG", int64(huge), err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("truncate %d took %v", int64(huge), d)
	}
	ok(t, unix.Truncate(f, 5), "truncate back to 5")
	if got := readFile(t, f); !bytes.Equal(got, data[:5]) {
		t.Errorf("after the huge truncate and back: %q", got)
	}
}

// testUtimensat: exact nanoseconds, UTIME_NOW, UTIME_OMIT, symlinks, errnos.
func testUtimensat(t *testing.T, e *env) {
	f := e.p("f")
	mkfile(t, f, 0o644, []byte("x"))
	for _, ts := range []unix.Timespec{
		{Sec: 1234567890, Nsec: 123456789},
		{Sec: 0, Nsec: 0},
		{Sec: 1, Nsec: 999999999},
		{Sec: 4102444800, Nsec: 1}, // 2100-01-01
		{Sec: 1700000000, Nsec: 500},
	} {
		at := unix.Timespec{Sec: ts.Sec - 1, Nsec: 999999999 - ts.Nsec}
		if at.Sec < 0 {
			at.Sec = 7
		}
		ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, f, []unix.Timespec{at, ts}, 0), "utimensat")
		st := lstat(t, f)
		if tsCmp(st.Mtim, ts) != 0 || tsCmp(st.Atim, at) != 0 {
			t.Errorf("utimensat: atime %s mtime %s, want %s %s", tsString(st.Atim), tsString(st.Mtim), tsString(at), tsString(ts))
		}
	}

	// Setting times changes ctime; UTIME_OMIT leaves a field alone.
	fixed := unix.Timespec{Sec: 1000000000, Nsec: 42}
	ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, f, []unix.Timespec{fixed, fixed}, 0), "utimensat")
	checkTimes(t, "utimensat UTIME_OMIT mtime", func() {
		ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, f, []unix.Timespec{{Sec: 2000000000, Nsec: 7}, {Nsec: unix.UTIME_OMIT}}, 0), "utimensat")
	}, tw{f, false, true})
	if st := lstat(t, f); tsCmp(st.Atim, unix.Timespec{Sec: 2000000000, Nsec: 7}) != 0 {
		t.Errorf("UTIME_OMIT mtime: atime %s", tsString(st.Atim))
	}
	ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, f, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: 5, Nsec: 6}}, 0), "utimensat omit atime")
	if st := lstat(t, f); tsCmp(st.Atim, unix.Timespec{Sec: 2000000000, Nsec: 7}) != 0 || tsCmp(st.Mtim, unix.Timespec{Sec: 5, Nsec: 6}) != 0 {
		t.Errorf("UTIME_OMIT atime: atime %s mtime %s", tsString(st.Atim), tsString(st.Mtim))
	}

	// UTIME_NOW sets both to about now (within a generous minute).
	before := time.Now().Add(-time.Minute)
	ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, f, []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}, 0), "utimensat UTIME_NOW")
	after := time.Now().Add(time.Minute)
	st := lstat(t, f)
	for _, ts := range []unix.Timespec{st.Atim, st.Mtim} {
		if tm := time.Unix(ts.Unix()); tm.Before(before) || tm.After(after) {
			t.Errorf("UTIME_NOW: time %v not near now", tm)
		}
	}

	// A directory's times, and a symlink's own times with AT_SYMLINK_NOFOLLOW.
	d := e.p("d")
	mkdir(t, d, 0o755)
	ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, d, []unix.Timespec{fixed, fixed}, 0), "utimensat dir")
	if st := lstat(t, d); tsCmp(st.Mtim, fixed) != 0 {
		t.Errorf("utimensat dir: mtime %s", tsString(st.Mtim))
	}
	ok(t, unix.Symlink("f", e.p("l")), "symlink")
	if !e.opts.NoSymlinkTimes {
		lt := unix.Timespec{Sec: 1111111111, Nsec: 111}
		ok(t, unix.UtimesNanoAt(unix.AT_FDCWD, e.p("l"), []unix.Timespec{lt, lt}, unix.AT_SYMLINK_NOFOLLOW), "utimensat symlink nofollow")
		if st := lstat(t, e.p("l")); tsCmp(st.Mtim, lt) != 0 {
			t.Errorf("utimensat symlink: mtime %s", tsString(st.Mtim))
		}
		if st := lstat(t, f); tsCmp(st.Mtim, lt) == 0 {
			t.Errorf("utimensat AT_SYMLINK_NOFOLLOW changed the target")
		}
	}

	// Through a descriptor (futimens).
	fd, err := unix.Open(f, unix.O_RDONLY, 0)
	ok(t, err, "open")
	ok(t, unix.UtimesNanoAt(fd, "", []unix.Timespec{fixed, fixed}, unix.AT_EMPTY_PATH), "futimens")
	unix.Close(fd)
	if st := lstat(t, f); tsCmp(st.Mtim, fixed) != 0 {
		t.Errorf("futimens: mtime %s", tsString(st.Mtim))
	}

	// Reading a file leaves mtime and ctime alone.
	checkTimes(t, "read", func() { readFile(t, f) }, tw{f, false, false})

	wantErrno(t, unix.UtimesNanoAt(unix.AT_FDCWD, e.p("missing"), []unix.Timespec{fixed, fixed}, 0), "utimensat missing", unix.ENOENT)
	wantErrno(t, unix.UtimesNanoAt(unix.AT_FDCWD, f, []unix.Timespec{{Nsec: 1e9}, fixed}, 0), "utimensat nsec 1e9", unix.EINVAL)
}
