package posix

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// env is the per-subtest working directory and the caller's options.
type env struct {
	dir  string
	opts Options
}

// newEnv makes a fresh 0755 subdirectory of root and removes it when the
// subtest ends, so that a failing check cannot disturb the next one.
func newEnv(t *testing.T, root string, opts Options) *env {
	t.Helper()
	d, err := os.MkdirTemp(root, "posix-")
	if err != nil {
		t.Fatalf("make work dir in %s: %v", root, err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatalf("chmod work dir: %v", err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(d); err != nil {
			t.Errorf("remove work dir: %v", err)
		}
	})
	return &env{dir: d, opts: opts}
}

// p joins names under the work directory.
func (e *env) p(names ...string) string {
	return filepath.Join(append([]string{e.dir}, names...)...)
}

// skipIf skips the current subtest when the caller opted out of a feature.
func skipIf(t *testing.T, opted bool, option string) {
	t.Helper()
	if opted {
		t.Skipf("skipped: caller set Options.%s", option)
	}
}

// needRoot skips checks that only root can make (chown to another user).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root (euid 0)")
	}
}

// ok fails the test now when err is not nil.
func ok(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// wantErrno checks that err is one of the allowed errnos.
func wantErrno(t *testing.T, err error, what string, want ...unix.Errno) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want %v", what, want)
		return
	}
	var got unix.Errno
	if !errors.As(err, &got) {
		t.Errorf("%s: error %v has no errno, want %v", what, err, want)
		return
	}
	if !slices.Contains(want, got) {
		t.Errorf("%s: got %v (%d), want %v", what, got, int(got), want)
	}
}

// lstat returns the stat of p without following a final symlink.
func lstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	ok(t, unix.Lstat(p, &st), "lstat "+p)
	return st
}

// mkfile creates p with exactly mode (umask is 0 during the suite) and data.
func mkfile(t *testing.T, p string, mode uint32, data []byte) {
	t.Helper()
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, mode)
	ok(t, err, "create "+p)
	defer unix.Close(fd)
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		ok(t, err, "write "+p)
		data = data[n:]
	}
}

// mkdir creates directory p with mode.
func mkdir(t *testing.T, p string, mode uint32) {
	t.Helper()
	ok(t, unix.Mkdir(p, mode), "mkdir "+p)
}

// readFile reads all of p.
func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	ok(t, err, "read "+p)
	return b
}

// wantMode checks the permission bits (07777) and the file type of p.
func wantMode(t *testing.T, p string, typ, perm uint32) {
	t.Helper()
	st := lstat(t, p)
	if st.Mode&unix.S_IFMT != typ {
		t.Errorf("%s: type %#o, want %#o", p, st.Mode&unix.S_IFMT, typ)
	}
	if st.Mode&0o7777 != perm {
		t.Errorf("%s: mode %#o, want %#o", p, st.Mode&0o7777, perm)
	}
}

// wantNlink checks the link count of p.
func wantNlink(t *testing.T, p string, n uint64) {
	t.Helper()
	if st := lstat(t, p); uint64(st.Nlink) != n {
		t.Errorf("%s: nlink %d, want %d", p, st.Nlink, n)
	}
}

// wantGone checks that p does not exist.
func wantGone(t *testing.T, p string) {
	t.Helper()
	var st unix.Stat_t
	wantErrno(t, unix.Lstat(p, &st), "lstat of removed "+p, unix.ENOENT)
}

// tsCmp orders two timespecs.
func tsCmp(a, b unix.Timespec) int {
	if a.Sec != b.Sec {
		if a.Sec < b.Sec {
			return -1
		}
		return 1
	}
	switch {
	case a.Nsec < b.Nsec:
		return -1
	case a.Nsec > b.Nsec:
		return 1
	}
	return 0
}

func tsString(ts unix.Timespec) string { return fmt.Sprintf("%d.%09d", ts.Sec, ts.Nsec) }

// tick waits long enough that a coarse kernel clock (jiffies, up to 10 ms
// at HZ=100) has advanced, so a timestamp update is observable.
func tick() { time.Sleep(25 * time.Millisecond) }

// tw says what must happen to the times of path across an operation:
// true means "must advance", false "must stay exactly equal".
type tw struct {
	path         string
	mtime, ctime bool
}

// checkTimes stats every path, waits a tick, runs op, and checks which of
// mtime and ctime advanced. It is how the suite asserts POSIX's "shall mark
// for update" rules (and the Linux ones for rename and link).
func checkTimes(t *testing.T, what string, op func(), wants ...tw) {
	t.Helper()
	before := make([]unix.Stat_t, len(wants))
	for i, w := range wants {
		before[i] = lstat(t, w.path)
	}
	tick()
	op()
	for i, w := range wants {
		after := lstat(t, w.path)
		checkOne(t, what, w.path, "mtime", before[i].Mtim, after.Mtim, w.mtime)
		checkOne(t, what, w.path, "ctime", before[i].Ctim, after.Ctim, w.ctime)
	}
}

func checkOne(t *testing.T, what, path, field string, before, after unix.Timespec, advance bool) {
	t.Helper()
	c := tsCmp(after, before)
	switch {
	case advance && c <= 0:
		t.Errorf("%s: %s of %s did not advance (%s -> %s)", what, field, filepath.Base(path), tsString(before), tsString(after))
	case !advance && c != 0:
		t.Errorf("%s: %s of %s changed (%s -> %s), want unchanged", what, field, filepath.Base(path), tsString(before), tsString(after))
	}
}

// name returns a file name of exactly n bytes made of c.
func name(c byte, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
