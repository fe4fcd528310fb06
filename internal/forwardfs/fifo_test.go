package forwardfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// plantFIFO replaces backing file p with a FIFO, as an attacker with write
// access to CIPHERDIR could.
func plantFIFO(t *testing.T, p string) {
	t.Helper()
	must(t, os.Remove(p))
	must(t, unix.Mkfifo(p, 0o644))
}

// noHang runs f and fails if it has not returned within a few seconds; a
// daemon blocked opening the FIFO at fifo is then released (by opening its
// write end), so that a regression fails instead of hanging the suite.
func noHang(t *testing.T, fifo string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return
	case <-time.After(5 * time.Second):
	}
	for range 10 { // each open of the FIFO may need its own release
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
		}
		select {
		case <-done:
			t.Fatalf("blocked on the FIFO %s", fifo)
		case <-time.After(500 * time.Millisecond):
		}
	}
	t.Fatalf("blocked on the FIFO %s, and could not release it", fifo)
}

// onlyBacking returns the one backing entry of dir whose name has prefix
// and suffix.
func onlyBacking(t *testing.T, dir, prefix, suffix string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), suffix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	if len(out) != 1 {
		t.Fatalf("backing entries %s*%s in %s: %v, want one", prefix, suffix, dir, out)
	}
	return out[0]
}

// TestFIFOInBacking: a FIFO planted in CIPHERDIR as a directory's
// encryptfs.dirid, as a long-name sidecar, as a symlink-target sidecar or
// in place of an open file's backing entry makes the operation fail at
// once (EIO, or ENOENT for the data file, as for any entry whose type
// changed under the kernel), never blocks the daemon (security review,
// issue 7 item 7).
func TestFIFOInBacking(t *testing.T) {
	t.Run("dirid", func(t *testing.T) {
		v := mounttest.NewVault(t, nil)
		must(t, os.Mkdir(filepath.Join(v.Mnt, "d"), 0o755))
		must(t, v.Srv.Unmount())
		fifo := filepath.Join(mounttest.BackingFiles(t, v.Cipher)[0], names.DirIDFile)
		plantFIFO(t, fifo)
		v.Remount(t)
		noHang(t, fifo, func() {
			if _, err := os.ReadDir(filepath.Join(v.Mnt, "d")); !errors.Is(err, syscall.EIO) {
				t.Errorf("readdir: %v, want EIO", err)
			}
		})
	})
	t.Run("long-name-sidecar", func(t *testing.T) {
		v := mounttest.NewVault(t, nil)
		must(t, os.WriteFile(filepath.Join(v.Mnt, strings.Repeat("L", 200)), []byte("x"), 0o644))
		must(t, v.Srv.Unmount())
		fifo := onlyBacking(t, v.Cipher, names.LongNamePrefix, names.LongNameSuffix)
		plantFIFO(t, fifo)
		v.Remount(t)
		noHang(t, fifo, func() {
			// The entry is hidden (its name cannot be decrypted).
			if ents, err := os.ReadDir(v.Mnt); err != nil || len(ents) != 0 {
				t.Errorf("readdir: %d entries, %v; want none", len(ents), err)
			}
		})
	})
	t.Run("symlink-sidecar", func(t *testing.T) {
		v := mounttest.NewVault(t, nil)
		must(t, os.Symlink(strings.Repeat("t", meta.MaxInlineTarget+1), filepath.Join(v.Mnt, "l")))
		must(t, v.Srv.Unmount())
		fifo := onlyBacking(t, v.Cipher, meta.SymlinkSidecarPrefix, "")
		plantFIFO(t, fifo)
		v.Remount(t)
		noHang(t, fifo, func() {
			if _, err := os.Readlink(filepath.Join(v.Mnt, "l")); !errors.Is(err, syscall.EIO) {
				t.Errorf("readlink: %v, want EIO", err)
			}
		})
	})
	t.Run("regular-file", func(t *testing.T) {
		v := mounttest.NewVault(t, nil)
		p := filepath.Join(v.Mnt, "f")
		must(t, os.WriteFile(p, []byte("x"), 0o644))
		// The file released (RELEASE is asynchronous: an open that finds
		// it still in the open-file table shares its fd, FIFO or not).
		v.Remount(t)
		// The kernel knows f as a regular file; its backing entry becomes
		// a FIFO before the open reaches the daemon.
		_, err := os.Stat(p)
		must(t, err)
		fifo := mounttest.BackingFiles(t, v.Cipher)[0]
		plantFIFO(t, fifo)
		noHang(t, fifo, func() {
			// O_NONBLOCK: should the kernel see the FIFO itself, the
			// test must not block in the kernel's own FIFO open.
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
				t.Error("open of a file whose backing entry is a FIFO succeeded")
			}
		})
	})
}
