package mount_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
)

// TestSignalUnmount: SIGTERM unmounts cleanly.
func TestSignalUnmount(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	stop := v.Srv.UnmountOnSignal()
	defer stop()
	must(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	done := make(chan struct{})
	go func() { v.Srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("not unmounted after SIGTERM")
	}
	if !strings.Contains(v.Log.String(), "unmounting") {
		t.Errorf("log: %q", v.Log.String())
	}
}

// TestIdle: the mount goes away by itself when idle.
func TestIdle(t *testing.T) {
	v := mounttest.NewVault(t, func(o *mount.Options) { o.Idle = 300 * time.Millisecond })
	must(t, os.WriteFile(filepath.Join(v.Mnt, "f"), nil, 0o644))
	done := make(chan struct{})
	go func() { v.Srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("not unmounted after idle timeout")
	}
}
