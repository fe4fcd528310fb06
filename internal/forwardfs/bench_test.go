package forwardfs_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"golang.org/x/sys/unix"
)

// Benchmarks run the daemon in the test process, so its CPU and the
// caller's share the machine; compare them side by side (-count, medians),
// and use bench/ for comparisons with other filesystems.

// newBenchVault mounts a vault for a benchmark.
func newBenchVault(b *testing.B) *mounttest.Vault {
	b.Helper()
	return mounttest.NewVault(b, nil)
}

// BenchmarkSeqWrite writes a 64 MiB file in 1 MiB writes.
func BenchmarkSeqWrite(b *testing.B) {
	v := newBenchVault(b)
	buf := make([]byte, 1<<20)
	b.SetBytes(64 << 20)
	for i := 0; b.Loop(); i++ {
		f, err := os.Create(filepath.Join(v.Mnt, "big"))
		if err != nil {
			b.Fatal(err)
		}
		for range 64 {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
	}
}

// BenchmarkSeqRead reads a 64 MiB file in 1 MiB reads (from the page cache
// after the first round: FOPEN_KEEP_CACHE).
func BenchmarkSeqRead(b *testing.B) {
	v := newBenchVault(b)
	p := filepath.Join(v.Mnt, "big")
	if err := os.WriteFile(p, make([]byte, 64<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(64 << 20)
	for b.Loop() {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		for {
			n, err := f.Read(buf)
			if n == 0 || err != nil {
				break
			}
		}
		f.Close()
	}
}

// BenchmarkSmallFiles creates, writes (4 KiB), stats and removes a file.
func BenchmarkSmallFiles(b *testing.B) {
	v := newBenchVault(b)
	data := make([]byte, 4096)
	for i := 0; b.Loop(); i++ {
		p := filepath.Join(v.Mnt, "f"+strconv.Itoa(i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := os.Stat(p); err != nil {
			b.Fatal(err)
		}
		if err := os.Remove(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLstatSymlinks lstats 1000 symlinks, each answered by the daemon
// (SharedStorage: no kernel caching), as ls -lR does after a remount.
func BenchmarkLstatSymlinks(b *testing.B) {
	v := mounttest.NewVault(b, func(o *mount.Options) { o.SharedStorage = true })
	for i := range 1000 {
		if err := os.Symlink("some/target/"+strconv.Itoa(i), filepath.Join(v.Mnt, "l"+strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
	var st unix.Stat_t
	for b.Loop() {
		for i := range 1000 {
			if err := unix.Lstat(filepath.Join(v.Mnt, "l"+strconv.Itoa(i)), &st); err != nil {
				b.Fatal(err)
			}
		}
	}
}
