package vault

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/fsck"
	"golang.org/x/sys/unix"
)

// plantFIFO replaces backing file p with a FIFO, as an attacker with write
// access to CIPHERDIR could.
func plantFIFO(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// noHang runs f and fails if it has not returned within a few seconds; a
// call blocked opening the FIFO at fifo is then released (by opening its
// write end), so that a regression fails instead of hanging.
func noHang(t *testing.T, fifo string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		for range 3 { // a reader that is released may open it again
			if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
			select {
			case <-done:
			case <-time.After(time.Second):
				continue
			}
			break
		}
		t.Fatalf("blocked on the FIFO %s", fifo)
	}
}

// TestFIFOInPlaceOfMetadata: a FIFO planted as encryptfs.dirid, as a
// long-name sidecar or as a symlink sidecar makes the operation that reads
// it fail as corrupt at once, instead of blocking forever in open(2)
// (security review, issue 7 item 7). fsck reports the FIFO dirid.
func TestFIFOInPlaceOfMetadata(t *testing.T) {
	long := strings.Repeat("L", 200) // stored as a long name with a sidecar
	longTarget := strings.Repeat("t", meta.MaxInlineTarget+1)
	t.Run("dirid", func(t *testing.T) {
		v, dir := newTestVault(t)
		if err := v.Mkdir("d", 0o700); err != nil {
			t.Fatal(err)
		}
		fifo := filepath.Join(backingPath(t, v, dir, "d"), names.DirIDFile)
		plantFIFO(t, fifo)
		noHang(t, fifo, func() {
			if _, err := v.ReadDir("d"); !errors.Is(err, ErrCorrupt) {
				t.Errorf("ReadDir: %v, want ErrCorrupt", err)
			}
		})
		noHang(t, fifo, func() {
			rep, err := fsck.Check(context.Background(), v.sess, fsck.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) != 1 || rep.Problems[0].Kind != fsck.KindDirID {
				t.Errorf("fsck: %+v, want one dirid problem", rep.Problems)
			}
		})
	})
	t.Run("long-name-sidecar", func(t *testing.T) {
		v, dir := newTestVault(t)
		if err := v.WriteFile(long, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		fifo := names.SidecarName(backingPath(t, v, dir, long))
		plantFIFO(t, fifo)
		noHang(t, fifo, func() {
			if _, err := v.ReadDir(""); !errors.Is(err, ErrCorrupt) {
				t.Errorf("ReadDir: %v, want ErrCorrupt", err)
			}
		})
	})
	t.Run("symlink-sidecar", func(t *testing.T) {
		v, dir := newTestVault(t)
		if err := v.Symlink(longTarget, "l"); err != nil {
			t.Fatal(err)
		}
		fifo := filepath.Join(dir, meta.SymlinkSidecarName(filepath.Base(backingPath(t, v, dir, "l"))))
		plantFIFO(t, fifo)
		noHang(t, fifo, func() {
			if _, err := v.Readlink("l"); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Readlink: %v, want ErrCorrupt", err)
			}
		})
	})
	// The data file itself: opened non-blocking and type-checked before
	// the engine sees it. (As root, the read-write open tried first does
	// not block on a FIFO even without O_NONBLOCK; a user without write
	// permission falls back to a read-only open, which would.)
	t.Run("regular-file", func(t *testing.T) {
		v, dir := newTestVault(t)
		if err := v.WriteFile("f", []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		fifo := backingPath(t, v, dir, "f")
		plantFIFO(t, fifo)
		noHang(t, fifo, func() {
			if _, err := v.ReadFile("f"); err == nil {
				t.Error("ReadFile of a FIFO backing entry succeeded")
			}
		})
	})
}
