package forwardfs_test

import (
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
func requests(log string, mark int) (int, map[string]int) {
	by := map[string]int{}
	total := 0
	for _, m := range rxLine.FindAllStringSubmatch(log[mark:], -1) {
		by[m[1]]++
		total++
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

// TestRequestCounts counts the FUSE requests for create+write+close,
// stat and unlink of one small file, after a warm-up file so that one-time
// requests (the first FLUSH, answered ENOSYS so that the kernel never sends
// it again) are not counted. Each step waits briefly for asynchronous
// requests (RELEASE, FORGET) so that they land in the step that caused them.
//
// Measured (Linux 6.18) and the documented bounds:
//   - create+write+close: LOOKUP (negative), CREATE, GETXATTR
//     security.capability (once per new inode: with HANDLE_KILLPRIV_V2 the
//     kernel then marks the inode S_NOSEC and asks no more), WRITE, RELEASE,
//     plus GETATTRs the kernel sends after a write invalidated its cached
//     size: 6 measured, bound 6.
//   - stat: 2 GETATTRs: the file's (the write invalidated its size) and
//     its directory's (the create changed the directory's mtime, and
//     default_permissions needs fresh attributes to check search
//     permission on the way), bound 2.
//   - unlink: UNLINK (+ FORGET), bound 2.
func TestRequestCounts(t *testing.T) {
	v := mounttest.NewVault(t, func(o *mount.Options) { o.Debug = true })
	logw := v.Log
	must(t, os.WriteFile(filepath.Join(v.Mnt, "warmup"), []byte("x"), 0o644))
	os.Remove(filepath.Join(v.Mnt, "warmup"))
	time.Sleep(100 * time.Millisecond) // let the warm-up's FORGET arrive

	p := filepath.Join(v.Mnt, "file")
	for _, step := range []struct {
		what string
		max  int
		do   func() error
	}{
		{"create+write+close", 6, func() error { return os.WriteFile(p, []byte("hello"), 0o644) }},
		{"stat", 2, func() error { _, err := os.Stat(p); return err }},
		{"unlink", 2, func() error { return os.Remove(p) }},
	} {
		mark := len(logw.String())
		must(t, step.do())
		time.Sleep(100 * time.Millisecond) // settle: not a timing assertion
		n, by := requests(logw.String(), mark)
		t.Logf("%s: %d requests: %s", step.what, n, summary(by))
		if n > step.max {
			t.Errorf("%s: %d requests (%s), documented bound %d", step.what, n, summary(by), step.max)
		}
	}
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
		time.Sleep(100 * time.Millisecond) // settle: not a timing assertion
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
