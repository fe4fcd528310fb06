package mount

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalUnmount: SIGTERM unmounts cleanly.
func TestSignalUnmount(t *testing.T) {
	v := newVault(t, nil)
	stop := v.srv.UnmountOnSignal()
	defer stop()
	must(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	done := make(chan struct{})
	go func() { v.srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("not unmounted after SIGTERM")
	}
	if !strings.Contains(v.log.String(), "unmounting") {
		t.Errorf("log: %q", v.log.String())
	}
}
