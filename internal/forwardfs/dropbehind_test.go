package forwardfs_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestWriteOnlyDropsBehind: a sole write-only handle writing a long run
// leaves only the last steps of it in the page cache (drop-behind,
// dropbehind.go), and what it wrote reads back whole. A read-write handle
// and a write-only handle beside a reader keep the cache: the controls
// show that the residency is measured at all, and that the mount drops
// nothing another handle could be using.
//
// Residency is read by fincore (util-linux) in a process of its own: it
// maps the file and asks mincore, which faults nothing in, but a mapping
// of the mount stays out of the process that serves it
// (mounttest.MapShared). fincore's open is a second handle, so the kernel
// keeps the cache for it (keepCache).
func TestWriteOnlyDropsBehind(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	const (
		total = 64 << 20
		step  = 8 << 20 // dropBehindStep
		block = 128 << 10
		// At most two steps stay cached once the run has ended, one
		// more if a drop was still in flight when the next was due
		// (one at a time) and the run ended before it was sent.
		bound = 3 * step
	)
	data := make([]byte, total)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	write := func(path string, flags int, beside func()) (resident int64) {
		t.Helper()
		fd, err := unix.Open(path, flags|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if beside != nil {
			beside()
		}
		for off := 0; off < total; off += block {
			if _, err := unix.Pwrite(fd, data[off:off+block], int64(off)); err != nil {
				t.Fatal(err)
			}
		}
		// The last drop may still be on its way: wait for the
		// residency to settle below the bound, or take the last reading.
		eventually(func() bool { resident = fincore(t, path); return resident <= bound })
		return resident
	}
	readBack := func(path string) {
		t.Helper()
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: read back %d bytes that differ from the %d written", path, len(got), len(data))
		}
	}

	sole := filepath.Join(v.Mnt, "sole")
	if res := write(sole, unix.O_WRONLY, nil); res > bound {
		t.Errorf("a sole write-only handle left %d MiB of %d cached, want at most %d", res>>20, total>>20, bound>>20)
	}
	readBack(sole)

	rdwr := filepath.Join(v.Mnt, "rdwr")
	if res := write(rdwr, unix.O_RDWR, nil); res < total-step {
		t.Errorf("a read-write handle left %d MiB of %d cached: the cache was dropped, or fincore cannot see it", res>>20, total>>20)
	}
	readBack(rdwr)

	beside := filepath.Join(v.Mnt, "beside")
	res := write(beside, unix.O_WRONLY, func() {
		r, err := os.Open(beside)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
	})
	if res < total-step {
		t.Errorf("a write-only handle beside a reader left %d MiB of %d cached: the reader's cache was dropped", res>>20, total>>20)
	}
	readBack(beside)
}

// fincore returns how many bytes of path are in the page cache.
func fincore(t *testing.T, path string) int64 {
	t.Helper()
	out, err := exec.Command("fincore", "--bytes", "--noheadings", "--output", "RES", path).Output()
	if err != nil {
		t.Fatalf("fincore %s: %v", path, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("fincore %s: %q: %v", path, out, err)
	}
	return n
}
