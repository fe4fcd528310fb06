package posix

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// testLink: hard links share an inode and data, change ctime, and refuse
// directories and existing names.
func testLink(t *testing.T, e *env) {
	skipIf(t, e.opts.NoHardLinks, "NoHardLinks")
	f, g := e.p("f"), e.p("g")
	mkfile(t, f, 0o640, []byte("shared"))
	mkdir(t, e.p("d"), 0o755)
	h := e.p("d", "h")

	checkTimes(t, "link", func() { ok(t, unix.Link(f, g), "link") }, tw{f, false, true}, tw{e.dir, true, true})
	checkTimes(t, "link into subdir", func() { ok(t, unix.Link(f, h), "link") }, tw{e.p("d"), true, true}, tw{f, false, true})
	for _, p := range []string{f, g, h} {
		wantNlink(t, p, 3)
	}
	if lstat(t, f).Ino != lstat(t, g).Ino || lstat(t, f).Ino != lstat(t, h).Ino {
		t.Errorf("links have different inode numbers")
	}
	ok(t, os.WriteFile(g, []byte("changed via g"), 0), "write via link")
	if got := readFile(t, h); string(got) != "changed via g" {
		t.Errorf("read via other link: %q", got)
	}
	ok(t, unix.Chmod(h, 0o600), "chmod via link")
	wantMode(t, f, unix.S_IFREG, 0o600)

	checkTimes(t, "unlink a link", func() { ok(t, unix.Unlink(g), "unlink") }, tw{f, false, true}, tw{e.dir, true, true})
	wantNlink(t, f, 2)
	wantNlink(t, h, 2)

	// Symlinks can be hard-linked; the new name is a symlink too.
	ok(t, unix.Symlink("f", e.p("sl")), "symlink")
	if e.opts.NoSymlinkHardLinks {
		t.Log("hard link of a symlink not checked: caller set Options.NoSymlinkHardLinks")
	} else {
		ok(t, unix.Linkat(unix.AT_FDCWD, e.p("sl"), unix.AT_FDCWD, e.p("sl2"), 0), "link symlink")
		if target, err := os.Readlink(e.p("sl2")); err != nil || target != "f" {
			t.Errorf("hard link of symlink: readlink %q, %v", target, err)
		}
		wantNlink(t, e.p("sl"), 2)
	}

	wantErrno(t, unix.Link(f, h), "link to existing name", unix.EEXIST)
	wantErrno(t, unix.Link(e.p("d"), e.p("d2")), "link a directory", unix.EPERM)
	wantErrno(t, unix.Link(e.p("missing"), e.p("m2")), "link missing source", unix.ENOENT)
	wantErrno(t, unix.Link(f, e.p("missing", "x")), "link into missing dir", unix.ENOENT)
	wantErrno(t, unix.Link(f, e.p(name('k', 256))), "link to 256-byte name", unix.ENAMETOOLONG)
}

// testNlink: link counts of directories follow their subdirectories; files
// do not count.
func testNlink(t *testing.T, e *env) {
	d := e.p("d")
	mkdir(t, d, 0o755)
	wantNlink(t, d, 2)
	for _, n := range []string{"a", "b", "c"} {
		mkdir(t, e.p("d", n), 0o755)
	}
	mkfile(t, e.p("d", "file"), 0o644, nil)
	ok(t, unix.Symlink("a", e.p("d", "sym")), "symlink")
	wantNlink(t, d, 5)
	ok(t, unix.Rmdir(e.p("d", "b")), "rmdir")
	wantNlink(t, d, 4)
	ok(t, unix.Rename(e.p("d", "c"), e.p("c")), "rename dir out")
	wantNlink(t, d, 3)
	ok(t, unix.Rename(e.p("c"), e.p("d", "a", "c")), "rename dir in")
	wantNlink(t, d, 3)
	wantNlink(t, e.p("d", "a"), 3)
	wantNlink(t, e.p("d", "file"), 1)

	// An unlinked but open file has nlink 0 and keeps its data.
	fd, err := unix.Open(e.p("d", "file"), unix.O_RDWR, 0)
	ok(t, err, "open")
	defer unix.Close(fd)
	ok(t, unix.Unlink(e.p("d", "file")), "unlink open file")
	var st unix.Stat_t
	ok(t, unix.Fstat(fd, &st), "fstat")
	if st.Nlink != 0 {
		t.Errorf("unlinked open file: nlink %d, want 0", st.Nlink)
	}
	_, err = unix.Pwrite(fd, []byte("still here"), 0)
	ok(t, err, "write unlinked file")
	buf := make([]byte, 32)
	n, err := unix.Pread(fd, buf, 0)
	ok(t, err, "read unlinked file")
	if string(buf[:n]) != "still here" {
		t.Errorf("unlinked file reads %q", buf[:n])
	}
}
