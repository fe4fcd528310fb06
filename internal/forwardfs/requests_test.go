package forwardfs_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
)

// rxLine matches go-fuse's debug line for an incoming request.
var rxLine = regexp.MustCompile(`rx \d+: ([A-Z_]+)`)

// requests counts the requests logged since mark, by opcode.
//
// INTERRUPT is listed but not counted: the kernel sends it when a signal
// reaches the test process while one of its requests is pending, and the
// Go runtime signals its own threads at any time (SIGURG preemption), so
// it says nothing about what the file system asks for (it made a CI run
// count "readdir 1000" one over its bound).
func requests(log string, mark int) (int, map[string]int) {
	by := map[string]int{}
	total := 0
	for _, m := range rxLine.FindAllStringSubmatch(log[mark:], -1) {
		by[m[1]]++
		if m[1] != "INTERRUPT" {
			total++
		}
	}
	return total, by
}

func summary(by map[string]int) string {
	var parts []string
	for op, n := range by {
		parts = append(parts, op+"="+itoa(n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// requestStep is one row of TestRequestCounts: what a program does, and
// the most FUSE requests it may cost (measured, see the table's comments).
type requestStep struct {
	what string
	max  int
	prep func() // not counted (may be nil)
	do   func() error
}

// TestRequestCounts counts the FUSE requests, by opcode, that the kernel
// sends for the everyday operations, and fails when one costs more round
// trips than the table allows: the table holds today's measured counts
// (Linux 6.18; the same on the classic and the io_uring transport), so a
// change that adds round trips fails here and one that saves some lowers
// the table (docs/performance.md, "Round trips", has the history).
//
// Requests are counted from go-fuse's debug log, which logs every request
// it receives on either transport (the /dev/fuse reader and the rings'
// ProtocolServer alike), including those go-fuse answers itself. A warm-up
// file first takes the one-time requests (the first FLUSH, answered ENOSYS
// so that the kernel never sends it again). Each step waits for its
// asynchronous requests (RELEASE, FORGET: settle) so that they land in
// the step that caused them.
//
// What the rows cost and why:
//   - create+write+close: LOOKUP (negative), CREATE, GETXATTR
//     security.capability (once per new inode: with HANDLE_KILLPRIV_V2 the
//     kernel then marks the inode S_NOSEC and asks no more), WRITE, RELEASE.
//   - stat: GETATTR of the file (the write invalidated its size).
//   - open+read+close right after the write: OPEN, READ (the open
//     dropped the page cache: see keepCache), RELEASE; no FLUSH on any
//     vault (FOPEN_NOFLUSH on a vault with roots).
//   - open+read+close again: OPEN and RELEASE; the pages stay cached
//     (FOPEN_KEEP_CACHE), so no READ, but a GETATTR (the READ before
//     invalidated the cached atime).
//   - readdir of 1000 entries (os.ReadDir, names cached by their create):
//     OPENDIR, 24 READDIRPLUS (one per 8 KiB getdents buffer of
//     os.ReadDir: 44 entries each), RELEASEDIR, and a GETATTR of the
//     directory, whose creates changed its mtime: the kernel checks it
//     before it keeps the listing in its cache (forwardfs.Options.
//     ListingCache).
//   - ls -l of the same 1000 entries: OPENDIR and RELEASEDIR; the listing
//     comes from the kernel's cache (26 requests before), and the lstats
//     are answered from the attributes the READDIRPLUS replies carried.
//   - the same after every file was written and read: the kernel's copy
//     is not used (it would cost a GETATTR per file), the listing is read
//     afresh.
//   - unlink: UNLINK (+ FORGET).
//   - a read of 4 MiB in 128 KiB reads (dd bs=128k) of a file just
//     written (its pages dropped at open): OPEN, a GETATTR (the writes
//     invalidated the size), READs of up to 1 MiB as the mount's
//     readahead allows (mount: raiseReadahead; 32 READs of 128 KiB
//     before; a mount by another user than root keeps them), RELEASE.
//   - readdir and ls -l of 1000 entries after a remount (no dentry or
//     attributes cached): a LOOKUP of the directory and the same listing;
//     the READDIRPLUS replies bring every entry's attributes, so ls -l's
//     lstats cost nothing.
//
// Tried and dropped (docs/performance.md, "Round trips"): the writeback
// cache (no row gets cheaper; unlink gains a SETATTR for the mtime the
// kernel kept), READDIRPLUS_AUTO (readdir 26 -> 11, but a cold ls -l
// 27 -> 970: the kernel lists with READDIR after the first reply and ls
// then LOOKUPs each entry).
func TestRequestCounts(t *testing.T) {
	v := mounttest.NewVault(t, func(o *mount.Options) { o.Debug = true })
	logw := v.Log
	must(t, os.WriteFile(filepath.Join(v.Mnt, "warmup"), []byte("x"), 0o644))
	os.Remove(filepath.Join(v.Mnt, "warmup"))
	big := filepath.Join(v.Mnt, "big")
	must(t, os.Mkdir(big, 0o755))
	const entries = 1000
	for i := range entries {
		f, err := os.Create(filepath.Join(big, "entry-with-a-longish-name-"+itoa(i)))
		must(t, err)
		must(t, f.Close())
	}
	settle(logw) // the warm-up's and the creates' RELEASEs and FORGETs

	p := filepath.Join(v.Mnt, "file")
	cold := func() {
		// Fresh kernel caches: no dentry or attributes of the entries.
		v.RemountWith(t, func(o *mount.Options) { o.Debug, o.Transport = true, mounttest.Transport(t) })
	}
	lsl := func() error {
		ents, err := os.ReadDir(big)
		for _, e := range ents {
			if _, err := os.Lstat(filepath.Join(big, e.Name())); err != nil {
				return err
			}
		}
		return err
	}
	seq := filepath.Join(v.Mnt, "sequential")
	readdir := func() error {
		ents, err := os.ReadDir(big)
		if err == nil && len(ents) != entries {
			t.Errorf("readdir: %d entries, want %d", len(ents), entries)
		}
		return err
	}
	seqMax := 9
	if os.Geteuid() != 0 {
		seqMax = 36 // the readahead stays at the kernel's 128 KiB
	}
	// No FLUSH on any vault: one without file roots answers ENOSYS (once,
	// before these steps), one with them opens every handle with
	// FOPEN_NOFLUSH and settles the file at RELEASE (Release).
	flush := 0
	steps := []requestStep{
		{"create+write+close", 5 + flush, nil, func() error { return os.WriteFile(p, []byte("hello"), 0o644) }},
		{"stat", 1, nil, func() error { _, err := os.Stat(p); return err }},
		{"open+read+close", 3, nil, func() error {
			b, err := os.ReadFile(p)
			if err == nil && string(b) != "hello" {
				t.Errorf("read %q", b)
			}
			return err
		}},
		{"open+read+close, cached", 3, nil, func() error { _, err := os.ReadFile(p); return err }},
		// The directory was just filled: the kernel asks for its mtime
		// (GETATTR) before it keeps the listing (ListingCache).
		{"readdir 1000", 27, nil, readdir},
		// The listing from the kernel's cache, the attributes too.
		{"ls -l 1000", 2, nil, lsl},
		// Every file written and read since: the kernel no longer holds
		// their attributes whole (size, mtime, atime), so it must not use
		// its copy of the listing (a GETATTR per file), but list afresh.
		{"ls -l 1000, files used", 27, func() {
			ents, err := os.ReadDir(big)
			must(t, err)
			for _, e := range ents {
				must(t, os.WriteFile(filepath.Join(big, e.Name()), []byte("x"), 0o644))
				_, err := os.ReadFile(filepath.Join(big, e.Name()))
				must(t, err)
			}
			settle(logw)
		}, lsl},
		{"unlink", 2, nil, func() error { return os.Remove(p) }},
		{"read 4 MiB, 128 KiB reads", seqMax, func() { // write it and drop its pages (keepCache)
			f, err := os.Create(seq)
			must(t, err)
			for range 32 {
				_, err := f.Write(make([]byte, 128<<10))
				must(t, err)
			}
			must(t, f.Close())
		}, func() error { return readIn(seq, 128<<10, 4<<20) }},
		{"readdir 1000, cold", 27, cold, readdir},
		{"ls -l 1000, cold", 27, cold, lsl},
	}
	// FLUSH: none, on every vault (see flush above), also for a handle
	// that wrote on a vault with file roots (issue 22: it cost a round
	// trip per close).
	wantFlush := map[string]int{"create+write+close": flush, "open+read+close": 0, "open+read+close, cached": 0, "read 4 MiB, 128 KiB reads": 0}
	var table strings.Builder
	fmt.Fprintf(&table, "%-26s %5s %5s  %s\n", "operation", "count", "bound", "requests")
	for _, step := range steps {
		if step.prep != nil {
			step.prep()
			settle(logw)
		}
		mark := len(logw.String())
		must(t, step.do())
		settle(logw)
		n, by := requests(logw.String(), mark)
		fmt.Fprintf(&table, "%-26s %5d %5d  %s\n", step.what, n, step.max, summary(by))
		if n > step.max {
			t.Errorf("%s: %d requests (%s), bound %d", step.what, n, summary(by), step.max)
		}
		if want, ok := wantFlush[step.what]; ok && by["FLUSH"] != want {
			t.Errorf("%s: %d FLUSH requests (%s), want %d", step.what, by["FLUSH"], summary(by), want)
		}
	}
	t.Logf("FUSE requests per operation (transport %s):\n%s", v.Srv.Transport(), table.String())
}

// settle waits until the daemon has logged nothing new for 200 ms (at
// most 10 s), so that the asynchronous requests a step causes (RELEASE,
// FORGET) are counted with it even on a loaded machine. It is not a
// timing assertion: a slow machine only waits longer.
func settle(logw *mounttest.SyncWriter) {
	last, quiet := len(logw.String()), time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if n := len(logw.String()); n != last {
			last, quiet = n, time.Now()
		} else if time.Since(quiet) >= 200*time.Millisecond {
			return
		}
	}
}

// readIn reads the file p with reads of n bytes, as dd bs=n does, and
// checks that it has size bytes.
func readIn(p string, n, size int) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, n)
	total := 0
	for {
		k, err := f.Read(buf)
		total += k
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if total != size {
		return fmt.Errorf("read %d bytes, want %d", total, size)
	}
	return nil
}

// TestReadRequestsAfterWrites counts the READ requests for reading a file
// back: after what tar x does (10 KiB writes, which do not cover whole
// pages, then chmod and utimes), the open drops the page cache so that one
// READ fetches the file (2 measured when the cache is kept); a second open
// of the unchanged file keeps the cache and needs no READ at all.
func TestReadRequestsAfterWrites(t *testing.T) {
	v := mounttest.NewVault(t, func(o *mount.Options) { o.Debug = true })
	logw := v.Log
	p := filepath.Join(v.Mnt, "records")
	want := make([]byte, 0, 40<<10)
	f, err := os.Create(p)
	must(t, err)
	for i := range 4 {
		rec := []byte(strings.Repeat(string(rune('a'+i)), 10<<10))
		want = append(want, rec...)
		if _, err := f.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	must(t, f.Chmod(0o640))
	must(t, f.Close())
	must(t, os.Chtimes(p, time.Unix(1e9, 0), time.Unix(1e9, 0)))
	for _, step := range []struct {
		what string
		max  int
	}{
		{"first read after the writes", 1},
		{"second read, file unchanged", 0},
	} {
		settle(logw)
		mark := len(logw.String())
		got, err := os.ReadFile(p)
		must(t, err)
		if string(got) != string(want) {
			t.Fatalf("%s: read back %d bytes, not what was written", step.what, len(got))
		}
		_, by := requests(logw.String(), mark)
		t.Logf("%s: %s", step.what, summary(by))
		if by["READ"] > step.max {
			t.Errorf("%s: %d READ requests (%s), bound %d", step.what, by["READ"], summary(by), step.max)
		}
	}
}
