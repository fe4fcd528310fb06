package forwardfs_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestFallocate: FALLOC_FL_KEEP_SIZE reserves backing space for the range
// (it did nothing) and leaves the size alone; mode 0 beyond the largest
// file is EFBIG (the kernel refuses it before the daemon sees it;
// TestAllocateOverflow checks the daemon's own check).
func TestFallocate(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	p := filepath.Join(v.Mnt, "f")
	f, err := os.Create(p)
	must(t, err)
	defer f.Close()
	fd := int(f.Fd())
	for _, r := range []struct{ off, size int64 }{
		{math.MaxInt64 - 10, 100}, // wraps as an unsigned sum past 2^63
		{math.MaxInt64 / 2, math.MaxInt64/2 + 10},
		{1, math.MaxInt64},
	} {
		if err := unix.Fallocate(fd, 0, r.off, r.size); err != unix.EFBIG {
			t.Errorf("fallocate(0, %d, %d) = %v, want EFBIG", r.off, r.size, err)
		}
	}

	const size = 1 << 20
	must(t, unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 0, size))
	var st unix.Stat_t
	must(t, unix.Fstat(fd, &st))
	if st.Size != 0 {
		t.Fatalf("size %d after KEEP_SIZE, want 0", st.Size)
	}
	bp := mounttest.BackingFiles(t, v.Cipher)
	var bst unix.Stat_t
	for _, b := range bp {
		if filepath.Base(b) != "encryptfs.dirid" {
			must(t, unix.Stat(b, &bst))
		}
	}
	if bst.Blocks*512 < size {
		t.Fatalf("backing file has %d bytes allocated after reserving %d", bst.Blocks*512, size)
	}
	must(t, unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 1<<40, 4096)) // beyond the end: allowed
	_, err = f.WriteAt([]byte("after"), 100)
	must(t, err)
	b, err := os.ReadFile(p)
	must(t, err)
	if len(b) != 105 || string(b[100:]) != "after" {
		t.Fatalf("read back %d bytes %q", len(b), b[100:])
	}
}
