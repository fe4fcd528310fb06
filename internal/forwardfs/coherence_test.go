package forwardfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestConcurrentWritesStayCoherent: while one descriptor writes whole pages
// and reads them back, others stat the file, open and close it and read
// around the written range. The kernel's FUSE write path marks a fully
// written page up to date and unlocks it before its WRITE reaches the file
// system; if anything drops the inode's page cache in that window (an
// open without FOPEN_KEEP_CACHE, or a GETATTR that shows another mtime
// with auto_inval_data) and a read fetches the page again, the cache keeps
// the bytes from before the write, and every later read returns them.
func TestConcurrentWritesStayCoherent(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	path := filepath.Join(v.Mnt, "coherent")
	const size = 4 << 20
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	wfd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(wfd)

	var stop atomic.Bool
	var wg sync.WaitGroup
	agitate := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := f(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// Another writer of the file, so that its mtime keeps changing.
	agitate(func() error {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Pwrite(fd, []byte{1}, size-1)
		return err
	})
	for range 2 {
		agitate(func() error {
			var st unix.Stat_t
			return unix.Stat(path, &st)
		})
	}
	for range 2 {
		agitate(func() error {
			fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			buf := make([]byte, 256<<10)
			for off := int64(0); off < 2<<20; off += int64(len(buf)) {
				if _, err := unix.Pread(fd, buf, off); err != nil {
					return err
				}
			}
			return nil
		})
	}

	deadline := time.Now().Add(6 * time.Second)
	want := make([]byte, 64<<10)
	got := make([]byte, len(want))
	var rounds int
	for ; time.Now().Before(deadline); rounds++ {
		off := int64(rounds%31) * 64 << 10
		for i := range want {
			want[i] = byte(rounds) ^ byte(i>>12)
		}
		if _, err := unix.Pwrite(wfd, want, off); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Pread(wfd, got, off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for got[i] == want[i] {
				i++
			}
			t.Errorf("round %d: read back after pwrite at %d differs at +%d: got %#x, want %#x", rounds, off, i, got[i], want[i])
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d rounds", rounds)
}
