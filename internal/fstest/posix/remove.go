package posix

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// testUnlink: removal of each file type, parent times, errnos.
func testUnlink(t *testing.T, e *env) {
	f := e.p("f")
	mkfile(t, f, 0o644, []byte("data"))
	checkTimes(t, "unlink", func() { ok(t, unix.Unlink(f), "unlink") }, tw{e.dir, true, true})
	wantGone(t, f)

	// A symlink goes, its target stays.
	mkfile(t, f, 0o644, nil)
	ok(t, unix.Symlink("f", e.p("l")), "symlink")
	ok(t, unix.Unlink(e.p("l")), "unlink symlink")
	wantGone(t, e.p("l"))
	lstat(t, f)
	ok(t, unix.Symlink("nowhere", e.p("dangling")), "symlink")
	ok(t, unix.Unlink(e.p("dangling")), "unlink dangling symlink")

	if !e.opts.NoFifo {
		ok(t, unix.Mkfifo(e.p("fifo"), 0o600), "mkfifo")
		ok(t, unix.Unlink(e.p("fifo")), "unlink fifo")
		wantGone(t, e.p("fifo"))
	}

	// In a subdirectory: that directory's times move, ours do not.
	mkdir(t, e.p("d"), 0o755)
	mkfile(t, e.p("d", "x"), 0o644, nil)
	checkTimes(t, "unlink in subdir", func() { ok(t, unix.Unlink(e.p("d", "x")), "unlink") }, tw{e.p("d"), true, true}, tw{e.dir, false, false})

	// Unlink and re-create the same name: a new, empty file.
	ok(t, os.WriteFile(e.p("re"), []byte("old contents"), 0o644), "write")
	ok(t, unix.Unlink(e.p("re")), "unlink")
	mkfile(t, e.p("re"), 0o600, nil)
	if got := readFile(t, e.p("re")); len(got) != 0 {
		t.Errorf("re-created file reads %q", got)
	}

	wantErrno(t, unix.Unlink(e.p("d")), "unlink a directory", unix.EISDIR)
	wantErrno(t, unix.Unlink(e.p("missing")), "unlink missing", unix.ENOENT)
	wantErrno(t, unix.Unlink(e.p("f", "x")), "unlink under a file", unix.ENOTDIR)
	wantErrno(t, unix.Unlink(e.p(name('u', 256))), "unlink 256-byte name", unix.ENAMETOOLONG)
}

// testRmdir: only empty directories go; parent nlink and times; errnos.
func testRmdir(t *testing.T, e *env) {
	d := e.p("d")
	mkdir(t, d, 0o755)
	links := uint64(lstat(t, e.dir).Nlink)
	checkTimes(t, "rmdir", func() { ok(t, unix.Rmdir(d), "rmdir") }, tw{e.dir, true, true})
	wantGone(t, d)
	wantNlink(t, e.dir, links-1)

	mkdir(t, d, 0o755)
	mkfile(t, e.p("d", "f"), 0o644, nil)
	wantErrno(t, unix.Rmdir(d), "rmdir non-empty (file)", unix.ENOTEMPTY, unix.EEXIST)
	ok(t, unix.Unlink(e.p("d", "f")), "unlink")
	mkdir(t, e.p("d", "sub"), 0o755)
	wantErrno(t, unix.Rmdir(d), "rmdir non-empty (dir)", unix.ENOTEMPTY, unix.EEXIST)
	ok(t, unix.Symlink("x", e.p("d", "sub", "l")), "symlink")
	wantErrno(t, unix.Rmdir(e.p("d", "sub")), "rmdir non-empty (symlink)", unix.ENOTEMPTY, unix.EEXIST)
	ok(t, unix.Unlink(e.p("d", "sub", "l")), "unlink")
	ok(t, unix.Rmdir(e.p("d", "sub")), "rmdir emptied dir")
	ok(t, unix.Rmdir(d), "rmdir emptied dir")

	// A directory emptied by renames is removable, and a removed name can be
	// made again.
	mkdir(t, d, 0o700)
	mkfile(t, e.p("d", "f"), 0o644, nil)
	ok(t, unix.Rename(e.p("d", "f"), e.p("f")), "rename out")
	ok(t, unix.Rmdir(d), "rmdir after rename out")
	mkdir(t, d, 0o711)
	wantMode(t, d, unix.S_IFDIR, 0o711)

	wantErrno(t, unix.Rmdir(e.p("f")), "rmdir a file", unix.ENOTDIR)
	ok(t, unix.Symlink("d", e.p("dl")), "symlink to dir")
	wantErrno(t, unix.Rmdir(e.p("dl")), "rmdir a symlink to a dir", unix.ENOTDIR)
	wantErrno(t, unix.Rmdir(e.p("missing")), "rmdir missing", unix.ENOENT)
	wantErrno(t, unix.Rmdir(e.p("d")+"/."), "rmdir dir/.", unix.EINVAL)
	wantErrno(t, unix.Rmdir(e.p(name('r', 256))), "rmdir 256-byte name", unix.ENAMETOOLONG)
}
