package forwardfs_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"golang.org/x/sys/unix"
)

// readSyscalls returns the read system calls this process made so far
// (/proc/self/io syscr): the daemon runs in the test's process, and each
// directory ID it reads is one read.
func readSyscalls(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Skipf("no I/O accounting: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "syscr: "); ok {
			n, err := strconv.Atoi(v)
			must(t, err)
			return n
		}
	}
	t.Fatal("no syscr in /proc/self/io")
	return 0
}

// TestSharedStorageDeepCost: with SharedStorage no directory fd is kept and
// each operation reads the IDs on its path again; that must cost O(depth)
// reads per request, not one more chain of reads per ancestor (it was
// 2^(depth-1) per request). A stat at depth 20 makes 21 LOOKUPs (no kernel
// caching), so about 20*20/2 ID reads; the bound leaves room for the
// FUSE requests' own reads.
func TestSharedStorageDeepCost(t *testing.T) {
	const depth = 20
	v := mounttest.NewVault(t, nil)
	dirfd, err := unix.Open(v.Mnt, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	for range depth {
		must(t, unix.Mkdirat(dirfd, "d", 0o755))
		next, err := unix.Openat(dirfd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		must(t, err)
		unix.Close(dirfd)
		dirfd = next
	}
	must(t, unix.Close(dirfd))
	deep := v.Mnt + strings.Repeat("/d", depth)
	must(t, os.WriteFile(deep+"/f", []byte("deep"), 0o644))
	must(t, v.Srv.Unmount())
	v.MountAgain(t, func(o *mount.Options) { o.SharedStorage = true })

	before := readSyscalls(t)
	var st unix.Stat_t
	must(t, unix.Lstat(deep+"/f", &st))
	reads := readSyscalls(t) - before
	if limit := 4 * depth * depth; reads > limit {
		t.Errorf("stat at depth %d: %d read calls, want at most %d", depth, reads, limit)
	}
	t.Logf("stat at depth %d: %d read calls", depth, reads)
	if b, err := os.ReadFile(deep + "/f"); err != nil || string(b) != "deep" {
		t.Fatalf("read: %q %v", b, err)
	}
}
