package backing

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// noHang runs f and fails the test if it has not returned within a few
// seconds. A call blocked in open(2) of the FIFO at fifo is then released
// by opening the FIFO's write end, so that a regression fails instead of
// hanging the test binary.
func noHang(t *testing.T, fifo string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
		}
		<-done
		t.Fatalf("blocked on the FIFO %s", fifo)
	}
}

// TestReadFileAtFIFO: a FIFO in the place of a metadata file gives
// ErrNotRegular at once instead of blocking in open(2) until a writer comes.
func TestReadFileAtFIFO(t *testing.T) {
	dir, root := setup(t)
	fifo := filepath.Join(dir, "meta")
	must(t, unix.Mkfifo(fifo, 0o644))
	noHang(t, fifo, func() {
		if _, err := ReadFileAt(root, "meta", 16); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFileAt of a FIFO: %v, want ErrNotRegular", err)
		}
	})
	if _, err := ReadFileAt(root, "link", 16); !errors.Is(err, unix.ELOOP) {
		t.Errorf("ReadFileAt of a symlink: %v, want ELOOP", err)
	}
	if _, err := ReadFileAt(root, "d", 16); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFileAt of a directory: %v, want ErrNotRegular", err)
	}
	if got, err := ReadFileAt(root, "f", 16); err != nil || string(got) != "x" {
		t.Errorf("ReadFileAt of a regular file: %q, %v", got, err)
	}
}

// TestOpenRegular: FIFOs (read or write side), directories and symlinks are
// refused without blocking; a regular file's fd comes back blocking
// (O_NONBLOCK cleared) with the caller's other changeable flags kept.
func TestOpenRegular(t *testing.T) {
	dir, root := setup(t)
	fifo := filepath.Join(dir, "fifo")
	must(t, unix.Mkfifo(fifo, 0o644))
	for _, flags := range []int{unix.O_RDONLY, unix.O_RDWR} {
		noHang(t, fifo, func() {
			if fd, _, err := OpenRegular(root, "fifo", flags); !errors.Is(err, ErrNotRegular) || fd != -1 {
				t.Errorf("OpenRegular(fifo, %#x) = %d, %v; want ErrNotRegular", flags, fd, err)
			}
		})
	}
	if _, _, err := OpenRegular(root, "link", unix.O_RDONLY); !errors.Is(err, unix.ELOOP) {
		t.Errorf("OpenRegular of a symlink: %v, want ELOOP", err)
	}
	if _, _, err := OpenRegular(root, "d", unix.O_RDONLY); !errors.Is(err, ErrNotRegular) {
		t.Errorf("OpenRegular of a directory: %v, want ErrNotRegular", err)
	}
	fd, st, err := OpenRegular(root, "f", unix.O_RDWR|unix.O_APPEND)
	must(t, err)
	defer Close(fd)
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != 1 {
		t.Errorf("stat of f: mode %#o size %d", st.Mode, st.Size)
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	must(t, err)
	if fl&unix.O_NONBLOCK != 0 || fl&unix.O_APPEND == 0 || fl&unix.O_ACCMODE != unix.O_RDWR {
		t.Errorf("fd flags %#x: want O_RDWR|O_APPEND without O_NONBLOCK", fl)
	}
	if _, err := os.Stat(fifo); err != nil {
		t.Fatal(err)
	}
}
