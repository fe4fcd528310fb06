package posix

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// testOpen: creation modes and ownership, O_EXCL, O_TRUNC, O_NOFOLLOW,
// O_DIRECTORY and the errnos of open(2).
func testOpen(t *testing.T, e *env) {
	for _, mode := range []uint32{0o644, 0o600, 0o755, 0o151, 0o000, 0o777} {
		p := e.p("mode", modeName(mode))
		if mode == 0o644 {
			mkdir(t, e.p("mode"), 0o755)
		}
		mkfile(t, p, mode, nil)
		wantMode(t, p, unix.S_IFREG, mode)
		st := lstat(t, p)
		if int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid() {
			t.Errorf("create: owner %d:%d, want %d:%d", st.Uid, st.Gid, os.Geteuid(), os.Getegid())
		}
		if st.Size != 0 || st.Nlink != 1 {
			t.Errorf("create: size %d nlink %d, want 0 and 1", st.Size, st.Nlink)
		}
	}

	f := e.p("f")
	checkTimes(t, "create", func() { mkfile(t, f, 0o644, []byte("hello")) },
		tw{e.dir, true, true})
	st := lstat(t, f)
	if tsCmp(st.Mtim, st.Ctim) != 0 {
		t.Errorf("new file: mtime %s != ctime %s", tsString(st.Mtim), tsString(st.Ctim))
	}

	_, err := unix.Open(f, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
	wantErrno(t, err, "O_CREAT|O_EXCL on existing file", unix.EEXIST)
	ok(t, unix.Symlink("dangling-target", e.p("dangling")), "symlink")
	_, err = unix.Open(e.p("dangling"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
	wantErrno(t, err, "O_CREAT|O_EXCL on dangling symlink", unix.EEXIST)
	wantGone(t, e.p("dangling-target"))

	// Plain O_CREAT on an existing file keeps its mode and contents.
	fd, err := unix.Open(f, unix.O_CREAT|unix.O_RDWR, 0o600)
	ok(t, err, "O_CREAT on existing")
	unix.Close(fd)
	wantMode(t, f, unix.S_IFREG, 0o644)
	if got := readFile(t, f); string(got) != "hello" {
		t.Errorf("O_CREAT on existing changed contents to %q", got)
	}

	// O_TRUNC on a non-empty file empties it and updates mtime and ctime.
	checkTimes(t, "O_TRUNC", func() {
		fd, err := unix.Open(f, unix.O_TRUNC|unix.O_WRONLY, 0)
		ok(t, err, "open O_TRUNC")
		unix.Close(fd)
	}, tw{f, true, true}, tw{e.dir, false, false})
	if st := lstat(t, f); st.Size != 0 {
		t.Errorf("O_TRUNC: size %d, want 0", st.Size)
	}

	// Opening for reading changes neither mtime nor ctime.
	checkTimes(t, "open O_RDONLY", func() {
		fd, err := unix.Open(f, unix.O_RDONLY, 0)
		ok(t, err, "open O_RDONLY")
		unix.Close(fd)
	}, tw{f, false, false})

	ok(t, unix.Symlink("f", e.p("lnk")), "symlink")
	_, err = unix.Open(e.p("lnk"), unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	wantErrno(t, err, "O_NOFOLLOW on symlink", unix.ELOOP)
	_, err = unix.Open(f, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	wantErrno(t, err, "O_DIRECTORY on file", unix.ENOTDIR)
	_, err = unix.Open(e.p("missing"), unix.O_RDONLY, 0)
	wantErrno(t, err, "open missing", unix.ENOENT)
	_, err = unix.Open(e.p("missing", "x"), unix.O_CREAT|unix.O_WRONLY, 0o644)
	wantErrno(t, err, "create in missing dir", unix.ENOENT)
	_, err = unix.Open(e.p("f", "x"), unix.O_CREAT|unix.O_WRONLY, 0o644)
	wantErrno(t, err, "create under a file", unix.ENOTDIR)
	_, err = unix.Open(f+"/", unix.O_RDONLY, 0)
	wantErrno(t, err, "open file with trailing slash", unix.ENOTDIR)
	_, err = unix.Open(e.dir, unix.O_WRONLY, 0)
	wantErrno(t, err, "open dir O_WRONLY", unix.EISDIR)
	_, err = unix.Open(e.dir, unix.O_RDWR|unix.O_CREAT, 0o644)
	wantErrno(t, err, "O_CREAT on a directory", unix.EISDIR)
	_, err = unix.Open(e.p(name('n', 256)), unix.O_CREAT|unix.O_WRONLY, 0o644)
	wantErrno(t, err, "create 256-byte name", unix.ENAMETOOLONG)

	// Writes to a read-only descriptor and reads of a directory fail.
	fd, err = unix.Open(f, unix.O_RDONLY, 0)
	ok(t, err, "open O_RDONLY")
	_, err = unix.Write(fd, []byte("x"))
	wantErrno(t, err, "write to O_RDONLY fd", unix.EBADF)
	unix.Close(fd)
	fd, err = unix.Open(e.dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	ok(t, err, "open dir")
	_, err = unix.Read(fd, make([]byte, 16))
	wantErrno(t, err, "read a directory fd", unix.EISDIR)
	unix.Close(fd)
}

// modeName is a readable file name for a mode.
func modeName(mode uint32) string { return fmt.Sprintf("m%04o", mode) }

// testMkdir: exact modes (0151 and friends), ownership, setgid inheritance,
// link counts, parent times and errnos.
func testMkdir(t *testing.T, e *env) {
	for _, mode := range []uint32{0o755, 0o151, 0o700, 0o000, 0o777, 0o1777, 0o2755, 0o3777} {
		p := e.p("d" + modeName(mode))
		mkdir(t, p, mode)
		// mkdir(2) on Linux ignores S_ISUID and S_ISGID in mode: the
		// setgid bit comes only from the parent.
		wantMode(t, p, unix.S_IFDIR, mode&0o1777)
		wantNlink(t, p, 2)
	}

	d := e.p("d")
	parentLinks := uint64(lstat(t, e.dir).Nlink)
	checkTimes(t, "mkdir", func() { mkdir(t, d, 0o755) }, tw{e.dir, true, true})
	wantNlink(t, e.dir, parentLinks+1)
	st := lstat(t, d)
	if int(st.Uid) != os.Geteuid() {
		t.Errorf("mkdir: uid %d, want %d", st.Uid, os.Geteuid())
	}
	if tsCmp(st.Mtim, st.Ctim) != 0 {
		t.Errorf("new dir: mtime %s != ctime %s", tsString(st.Mtim), tsString(st.Ctim))
	}
	entries, err := os.ReadDir(d)
	ok(t, err, "readdir new dir")
	if len(entries) != 0 {
		t.Errorf("new dir has entries %v", entries)
	}

	// A directory with S_ISGID passes its group and the bit on to new dirs,
	// and its group to new files.
	if os.Geteuid() == 0 && !e.opts.NoChown {
		g := e.p("sgid")
		mkdir(t, g, 0o2775)
		ok(t, unix.Chown(g, 0, 65534), "chown sgid dir")
		ok(t, unix.Chmod(g, 0o2775), "chmod sgid dir")
		mkdir(t, e.p("sgid", "sub"), 0o755)
		st := lstat(t, e.p("sgid", "sub"))
		if st.Gid != 65534 || st.Mode&unix.S_ISGID == 0 {
			t.Errorf("mkdir in setgid dir: gid %d mode %#o, want gid 65534 and S_ISGID", st.Gid, st.Mode&0o7777)
		}
		mkfile(t, e.p("sgid", "file"), 0o644, nil)
		if st := lstat(t, e.p("sgid", "file")); st.Gid != 65534 {
			t.Errorf("create in setgid dir: gid %d, want 65534", st.Gid)
		}
	}

	wantErrno(t, unix.Mkdir(d, 0o755), "mkdir existing dir", unix.EEXIST)
	mkfile(t, e.p("f"), 0o644, nil)
	wantErrno(t, unix.Mkdir(e.p("f"), 0o755), "mkdir over file", unix.EEXIST)
	ok(t, unix.Symlink("nowhere", e.p("dangling")), "symlink")
	wantErrno(t, unix.Mkdir(e.p("dangling"), 0o755), "mkdir over dangling symlink", unix.EEXIST)
	wantErrno(t, unix.Mkdir(e.p("missing", "d"), 0o755), "mkdir in missing dir", unix.ENOENT)
	wantErrno(t, unix.Mkdir(e.p("f", "d"), 0o755), "mkdir under a file", unix.ENOTDIR)
	wantErrno(t, unix.Mkdir(e.p(name('d', 256)), 0o755), "mkdir 256-byte name", unix.ENAMETOOLONG)
}

// testMkfifo: FIFOs are created with the right type and mode and work as pipes.
func testMkfifo(t *testing.T, e *env) {
	skipIf(t, e.opts.NoFifo, "NoFifo")
	p := e.p("fifo")
	checkTimes(t, "mkfifo", func() { ok(t, unix.Mkfifo(p, 0o640), "mkfifo") }, tw{e.dir, true, true})
	wantMode(t, p, unix.S_IFIFO, 0o640)
	wantNlink(t, p, 1)
	wantErrno(t, unix.Mkfifo(p, 0o640), "mkfifo existing", unix.EEXIST)
	wantErrno(t, unix.Mkfifo(e.p("missing", "f"), 0o640), "mkfifo in missing dir", unix.ENOENT)
	wantErrno(t, unix.Mkfifo(e.p(name('p', 256)), 0o640), "mkfifo 256-byte name", unix.ENAMETOOLONG)

	// O_RDWR on a FIFO never blocks on Linux: write then read through it.
	fd, err := unix.Open(p, unix.O_RDWR, 0)
	ok(t, err, "open fifo")
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte("through the pipe"))
	ok(t, err, "write fifo")
	buf := make([]byte, 64)
	n, err := unix.Read(fd, buf)
	ok(t, err, "read fifo")
	if string(buf[:n]) != "through the pipe" {
		t.Errorf("fifo read %q", buf[:n])
	}
	if st := lstat(t, p); st.Size != 0 {
		t.Errorf("fifo size %d, want 0", st.Size)
	}

	mknodPath := e.p("mknod-fifo")
	ok(t, unix.Mknod(mknodPath, unix.S_IFIFO|0o600, 0), "mknod S_IFIFO")
	wantMode(t, mknodPath, unix.S_IFIFO, 0o600)
}

// testSymlink: targets are kept byte for byte (up to PATH_MAX-1 bytes), the
// link has its own inode, loops give ELOOP.
func testSymlink(t *testing.T, e *env) {
	targets := []string{
		"f",
		"../up/and/down",
		"/absolute/path/name",
		"dots.and spaces ~",
		"unicodé-名前",
		name('t', 255),
		string(bytes.Repeat([]byte("abcdefghij/"), 93)), // 1023 bytes
	}
	if !e.opts.NoLongSymlinks {
		targets = append(targets, string(bytes.Repeat([]byte("x"), 3031)), string(bytes.Repeat([]byte("y"), 3032)), string(bytes.Repeat([]byte("z/"), 2047))+"z")
	}
	for i, target := range targets {
		p := e.p("l" + string(rune('a'+i)))
		ok(t, unix.Symlink(target, p), "symlink target len "+strconv.Itoa(len(target)))
		st := lstat(t, p)
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("symlink: type %#o", st.Mode&unix.S_IFMT)
		}
		if st.Size != int64(len(target)) {
			t.Errorf("symlink len %d: st_size %d", len(target), st.Size)
		}
		got, err := os.Readlink(p)
		ok(t, err, "readlink")
		if got != target {
			t.Errorf("readlink len %d: got %d bytes %.40q...", len(target), len(got), got)
		}
	}

	mkfile(t, e.p("f"), 0o600, []byte("target data"))
	l := e.p("to-f")
	checkTimes(t, "symlink", func() { ok(t, unix.Symlink("f", l), "symlink") }, tw{e.dir, true, true}, tw{e.p("f"), false, false})
	if got := readFile(t, l); string(got) != "target data" {
		t.Errorf("read through symlink: %q", got)
	}
	if lstat(t, l).Ino == lstat(t, e.p("f")).Ino {
		t.Errorf("symlink shares the target's inode")
	}

	wantErrno(t, unix.Symlink("x", l), "symlink over existing", unix.EEXIST)
	wantErrno(t, unix.Symlink("x", e.p("missing", "l")), "symlink in missing dir", unix.ENOENT)
	wantErrno(t, unix.Symlink("x", e.p(name('s', 256))), "symlink 256-byte name", unix.ENAMETOOLONG)
	wantErrno(t, unix.Symlink(string(bytes.Repeat([]byte("x"), 4096)), e.p("toolong")), "symlink 4096-byte target", unix.ENAMETOOLONG)
	wantErrno(t, unix.Symlink("", e.p("empty")), "symlink empty target", unix.ENOENT)

	ok(t, unix.Symlink("loop2", e.p("loop1")), "symlink loop1")
	ok(t, unix.Symlink("loop1", e.p("loop2")), "symlink loop2")
	var st unix.Stat_t
	wantErrno(t, unix.Stat(e.p("loop1"), &st), "stat symlink loop", unix.ELOOP)
	_, err := unix.Open(e.p("loop1", "x"), unix.O_RDONLY, 0)
	wantErrno(t, err, "open through symlink loop", unix.ELOOP)
	ok(t, unix.Symlink("nowhere", e.p("dangling")), "symlink dangling")
	wantErrno(t, unix.Stat(e.p("dangling"), &st), "stat dangling symlink", unix.ENOENT)
	_, err = os.Readlink(e.p("f"))
	wantErrno(t, err, "readlink a regular file", unix.EINVAL)
}
