package posix

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// testRename: rename(2) of every type, in place and across directories,
// over existing targets; times, link counts, ".." of moved directories and
// errnos.
func testRename(t *testing.T, e *env) {
	a, b := e.p("a"), e.p("b")
	mkdir(t, a, 0o755)
	mkdir(t, b, 0o755)

	// A file within one directory keeps inode, mode and data; the directory's
	// times and the file's ctime move (Linux updates ctime on rename).
	f := e.p("a", "f")
	mkfile(t, f, 0o604, []byte("contents"))
	ino := lstat(t, f).Ino
	checkTimes(t, "rename in place", func() { ok(t, unix.Rename(f, e.p("a", "g")), "rename") }, tw{a, true, true})
	wantGone(t, f)
	g := e.p("a", "g")
	if st := lstat(t, g); st.Ino != ino || st.Mode&0o7777 != 0o604 {
		t.Errorf("renamed file: ino %d mode %#o, want %d 0604", st.Ino, st.Mode&0o7777, ino)
	}
	if got := readFile(t, g); string(got) != "contents" {
		t.Errorf("renamed file reads %q", got)
	}

	// Across directories: both parents' times, the file's ctime but not mtime.
	h := e.p("b", "h")
	checkTimes(t, "rename across dirs", func() { ok(t, unix.Rename(g, h), "rename") }, tw{a, true, true}, tw{b, true, true})
	before := lstat(t, h)
	tick()
	ok(t, unix.Rename(h, g), "rename back")
	after := lstat(t, g)
	checkOne(t, "rename", g, "mtime", before.Mtim, after.Mtim, false)
	checkOne(t, "rename", g, "ctime", before.Ctim, after.Ctim, true)
	ok(t, unix.Rename(g, h), "rename")

	// Over an existing file: the target is replaced; its other links remain.
	mkfile(t, e.p("b", "old"), 0o644, []byte("old"))
	if !e.opts.NoHardLinks {
		ok(t, unix.Link(e.p("b", "old"), e.p("old-link")), "link")
		wantNlink(t, e.p("old-link"), 2)
	}
	ok(t, unix.Rename(h, e.p("b", "old")), "rename over file")
	wantGone(t, h)
	if got := readFile(t, e.p("b", "old")); string(got) != "contents" {
		t.Errorf("rename over file: target reads %q", got)
	}
	if !e.opts.NoHardLinks {
		wantNlink(t, e.p("old-link"), 1)
		if got := readFile(t, e.p("old-link")); string(got) != "old" {
			t.Errorf("replaced file's other link reads %q", got)
		}
	}

	// Renaming one name of a file onto another name of the same file is a
	// no-op that keeps both names.
	if !e.opts.NoHardLinks {
		ok(t, unix.Link(e.p("b", "old"), e.p("b", "same")), "link")
		ok(t, unix.Rename(e.p("b", "old"), e.p("b", "same")), "rename onto own link")
		lstat(t, e.p("b", "old"))
		wantNlink(t, e.p("b", "same"), 2)
	}

	// Directories: moved with their contents; ".." follows; nlink of both
	// parents; over an empty directory is allowed.
	d := e.p("a", "d")
	mkdir(t, d, 0o750)
	mkfile(t, e.p("a", "d", "inner"), 0o644, []byte("inner"))
	aLinks, bLinks := uint64(lstat(t, a).Nlink), uint64(lstat(t, b).Nlink)
	checkTimes(t, "rename dir across", func() { ok(t, unix.Rename(d, e.p("b", "d")), "rename dir") }, tw{a, true, true}, tw{b, true, true})
	wantNlink(t, a, aLinks-1)
	wantNlink(t, b, bLinks+1)
	if lstat(t, e.p("b", "d")+"/..").Ino != lstat(t, b).Ino {
		t.Errorf("moved dir: .. is not the new parent")
	}
	if got := readFile(t, e.p("b", "d", "inner")); string(got) != "inner" {
		t.Errorf("moved dir content reads %q", got)
	}
	wantMode(t, e.p("b", "d"), unix.S_IFDIR, 0o750)
	mkdir(t, e.p("empty"), 0o755)
	ok(t, unix.Rename(e.p("b", "d"), e.p("empty")), "rename dir over empty dir")
	if got := readFile(t, e.p("empty", "inner")); string(got) != "inner" {
		t.Errorf("rename over empty dir: content reads %q", got)
	}

	// Symlinks keep their target through a move to another directory.
	ok(t, unix.Symlink("../some/target", e.p("a", "sl")), "symlink")
	ok(t, unix.Rename(e.p("a", "sl"), e.p("b", "sl2")), "rename symlink")
	if got, err := os.Readlink(e.p("b", "sl2")); err != nil || got != "../some/target" {
		t.Errorf("renamed symlink: readlink %q, %v", got, err)
	}

	// Long names on both sides.
	long1, long2 := name('x', 255), name('y', 255)
	mkfile(t, e.p("a", long1), 0o644, []byte("long"))
	ok(t, unix.Rename(e.p("a", long1), e.p("b", long2)), "rename 255-byte names")
	if got := readFile(t, e.p("b", long2)); string(got) != "long" {
		t.Errorf("255-byte rename reads %q", got)
	}

	mkdir(t, e.p("full"), 0o755)
	mkfile(t, e.p("full", "x"), 0o644, nil)
	mkdir(t, e.p("src"), 0o755)
	mkfile(t, e.p("file"), 0o644, nil)
	wantErrno(t, unix.Rename(e.p("src"), e.p("full")), "rename dir over non-empty dir", unix.ENOTEMPTY, unix.EEXIST)
	wantErrno(t, unix.Rename(e.p("src"), e.p("file")), "rename dir over file", unix.ENOTDIR)
	wantErrno(t, unix.Rename(e.p("file"), e.p("src")), "rename file over dir", unix.EISDIR)
	wantErrno(t, unix.Rename(e.p("src"), e.p("src", "sub")), "rename dir into itself", unix.EINVAL)
	mkdir(t, e.p("src", "sub"), 0o755)
	wantErrno(t, unix.Rename(e.p("src"), e.p("src", "sub", "deeper")), "rename dir into own subdir", unix.EINVAL)
	wantErrno(t, unix.Rename(e.p("missing"), e.p("x")), "rename missing", unix.ENOENT)
	wantErrno(t, unix.Rename(e.p("file"), e.p("missing", "x")), "rename into missing dir", unix.ENOENT)
	wantErrno(t, unix.Rename(e.p("file"), e.p("file", "x")), "rename under a file", unix.ENOTDIR)
	wantErrno(t, unix.Rename(e.p("file"), e.p(name('z', 256))), "rename to 256-byte name", unix.ENAMETOOLONG)
	wantErrno(t, unix.Rename(e.p("src")+"/.", e.p("x")), "rename dir/.", unix.EINVAL, unix.EBUSY)
	lstat(t, e.p("file"))
}

// testRenameat2: RENAME_NOREPLACE and RENAME_EXCHANGE.
func testRenameat2(t *testing.T, e *env) {
	t.Run("noreplace", func(t *testing.T) {
		skipIf(t, e.opts.NoRenameNoReplace, "NoRenameNoReplace")
		mkfile(t, e.p("nr1"), 0o644, []byte("one"))
		mkfile(t, e.p("nr2"), 0o644, []byte("two"))
		wantErrno(t, unix.Renameat2(unix.AT_FDCWD, e.p("nr1"), unix.AT_FDCWD, e.p("nr2"), unix.RENAME_NOREPLACE), "RENAME_NOREPLACE onto existing", unix.EEXIST)
		if got := readFile(t, e.p("nr2")); string(got) != "two" {
			t.Errorf("RENAME_NOREPLACE failure changed the target: %q", got)
		}
		ok(t, unix.Renameat2(unix.AT_FDCWD, e.p("nr1"), unix.AT_FDCWD, e.p("nr3"), unix.RENAME_NOREPLACE), "RENAME_NOREPLACE to new name")
		wantGone(t, e.p("nr1"))
		if got := readFile(t, e.p("nr3")); string(got) != "one" {
			t.Errorf("RENAME_NOREPLACE: new name reads %q", got)
		}
	})
	t.Run("exchange", func(t *testing.T) {
		skipIf(t, e.opts.NoRenameExchange, "NoRenameExchange")
		mkdir(t, e.p("x1"), 0o755)
		mkdir(t, e.p("x2"), 0o700)
		mkfile(t, e.p("x1", "file"), 0o644, []byte("a file"))
		mkfile(t, e.p("x2", "in-dir"), 0o644, []byte("in dir"))
		fileIno, dirIno := lstat(t, e.p("x1", "file")).Ino, lstat(t, e.p("x2")).Ino
		checkTimes(t, "RENAME_EXCHANGE", func() {
			ok(t, unix.Renameat2(unix.AT_FDCWD, e.p("x1", "file"), unix.AT_FDCWD, e.p("x2"), unix.RENAME_EXCHANGE), "RENAME_EXCHANGE file and dir")
		}, tw{e.dir, true, true}, tw{e.p("x1"), true, true})
		if st := lstat(t, e.p("x2")); st.Ino != fileIno || st.Mode&unix.S_IFMT != unix.S_IFREG {
			t.Errorf("exchange: x2 is not the file")
		}
		if st := lstat(t, e.p("x1", "file")); st.Ino != dirIno || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			t.Errorf("exchange: x1/file is not the dir")
		}
		if got := readFile(t, e.p("x2")); string(got) != "a file" {
			t.Errorf("exchanged file reads %q", got)
		}
		if got := readFile(t, e.p("x1", "file", "in-dir")); string(got) != "in dir" {
			t.Errorf("exchanged dir content reads %q", got)
		}
		if lstat(t, e.p("x1", "file")+"/..").Ino != lstat(t, e.p("x1")).Ino {
			t.Errorf("exchanged dir: .. is not its new parent")
		}
		wantNlink(t, e.p("x1"), 3)
		// Two symlinks: the targets travel with the names.
		ok(t, unix.Symlink("target-one", e.p("s1")), "symlink")
		ok(t, unix.Symlink("target-two", e.p("x1", "s2")), "symlink")
		ok(t, unix.Renameat2(unix.AT_FDCWD, e.p("s1"), unix.AT_FDCWD, e.p("x1", "s2"), unix.RENAME_EXCHANGE), "RENAME_EXCHANGE symlinks")
		if got, _ := os.Readlink(e.p("s1")); got != "target-two" {
			t.Errorf("exchanged symlink s1 -> %q", got)
		}
		if got, _ := os.Readlink(e.p("x1", "s2")); got != "target-one" {
			t.Errorf("exchanged symlink s2 -> %q", got)
		}
		wantErrno(t, unix.Renameat2(unix.AT_FDCWD, e.p("x2"), unix.AT_FDCWD, e.p("nothing"), unix.RENAME_EXCHANGE), "RENAME_EXCHANGE with missing target", unix.ENOENT)
		wantErrno(t, unix.Renameat2(unix.AT_FDCWD, e.p("x2"), unix.AT_FDCWD, e.p("x1"), unix.RENAME_EXCHANGE|unix.RENAME_NOREPLACE), "RENAME_EXCHANGE|RENAME_NOREPLACE", unix.EINVAL)
	})
}
