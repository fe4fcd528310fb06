package backing

import (
	"bytes"
	"io/fs"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// newSpaceFile creates file name in a test directory, closed at the
// test's end, and returns it with its fd.
func newSpaceFile(t *testing.T, name string) (*File, int) {
	t.Helper()
	_, root := setup(t)
	fd, err := openat(root, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
	must(t, err)
	f := NewFile(fd, nil)
	t.Cleanup(func() { f.Close() })
	return f, fd
}

// TestSpace: ReserveSpace keeps the size, PunchHole zeroes a range and
// SeekHole finds it (the test's temp dir supports holes: ext4 or tmpfs).
func TestSpace(t *testing.T) {
	f, _ := newSpaceFile(t, "s")
	data := bytes.Repeat([]byte{0xaa}, 1<<20)
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	must(t, f.ReserveSpace(1<<20, 1<<20))
	if fi, err := f.Stat(); err != nil || fi.Size() != 1<<20 {
		t.Fatalf("after ReserveSpace: %v, %v", fi, err)
	}
	if h, err := f.SeekHole(0); err != nil || h != 1<<20 {
		t.Fatalf("SeekHole before punching = %d, %v, want the end", h, err)
	}
	must(t, f.PunchHole(256<<10, 256<<10))
	got := make([]byte, 256<<10)
	if _, err := f.ReadAt(got, 256<<10); err != nil || !bytes.Equal(got, make([]byte, len(got))) {
		t.Fatalf("punched range does not read as zeros: %v", err)
	}
	if h, err := f.SeekHole(0); err != nil || h != 256<<10 {
		t.Fatalf("SeekHole = %d, %v, want %d", h, err, 256<<10)
	}
	must(t, f.ReserveSpace(0, 0))
	must(t, f.PunchHole(0, 0))
}

// TestAllocatedBytes: a file written whole has its size allocated; one
// truncated far past its data has not; an os.File's stat tells the same,
// and a FileInfo with no stat behind it tells nothing.
func TestAllocatedBytes(t *testing.T) {
	f, fd := newSpaceFile(t, "a")
	if _, err := f.WriteAt(bytes.Repeat([]byte{1}, 1<<20), 0); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	must(t, err)
	if n, ok := AllocatedBytes(fi); !ok || n < fi.Size() {
		t.Fatalf("written whole: %d bytes allocated (%v), size %d", n, ok, fi.Size())
	}
	dup, err := unix.Dup(fd)
	must(t, err)
	of := os.NewFile(uintptr(dup), "a") // the same file, through os.File.Stat
	defer of.Close()
	ofi, err := of.Stat()
	must(t, err)
	if n, ok := AllocatedBytes(ofi); !ok || n < ofi.Size() {
		t.Fatalf("os.File.Stat: %d bytes allocated (%v), size %d", n, ok, ofi.Size())
	}
	must(t, f.Truncate(1<<30))
	fi, err = f.Stat()
	must(t, err)
	if n, ok := AllocatedBytes(fi); !ok || n >= fi.Size() {
		t.Fatalf("truncated to 1 GiB: %d bytes allocated (%v), size %d", n, ok, fi.Size())
	}
	if _, ok := AllocatedBytes(noStat{}); ok {
		t.Fatal("a FileInfo without a stat: ok")
	}
}

// noStat is a FileInfo whose Sys is nil.
type noStat struct{ fs.FileInfo }

func (noStat) Sys() any { return nil }
