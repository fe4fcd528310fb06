package mount_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
)

// TestPanicAnswersEIO: a panic in a request handler (here LOOKUP of one
// name, through the test hook) answers that request with EIO, logs the
// panic with its stack once to the mount's log, and the mount goes on
// serving, on the transport of $ENCRYPTFS_TRANSPORT (scripts/test.sh runs
// it on both). go-fuse's recover answers EIO; the log line is the mount's
// PanicHandler's (without it go-fuse's default logs another line, and the
// test fails). A panic that go-fuse does not recover is transport's
// TestPanicInReadResult.
func TestPanicAnswersEIO(t *testing.T) {
	const boom = "boom"
	var panics atomic.Int32
	v := mounttest.NewVault(t, func(o *mount.Options) {
		o.LookupHook = func(name string) {
			if name == boom {
				panics.Add(1)
				panic("test: planted panic in LOOKUP")
			}
		}
	})
	t.Logf("transport: %s", v.Srv.DescribeTransport())
	for i := range 3 {
		_, err := os.Stat(filepath.Join(v.Mnt, boom))
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("stat %d of the panicking name: %v, want EIO", i, err)
		}
		// The mount still serves: a file written and read back, a
		// missing name still ENOENT.
		p := filepath.Join(v.Mnt, "after")
		if err := os.WriteFile(p, []byte{byte(i)}, 0o600); err != nil {
			t.Fatalf("write after panic %d: %v", i, err)
		}
		if b, err := os.ReadFile(p); err != nil || len(b) != 1 || b[0] != byte(i) {
			t.Fatalf("read after panic %d: %q, %v", i, b, err)
		}
		if _, err := os.Stat(filepath.Join(v.Mnt, "missing")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("stat of a missing name after panic %d: %v", i, err)
		}
	}
	n := int(panics.Load())
	if n < 3 {
		t.Fatalf("the hook panicked %d times, want at least 3", n)
	}
	// One log entry per panic, with the panic value and the stack.
	log := v.Log.String()
	if got := strings.Count(log, "panic in a FUSE request handler (answered EIO; the mount goes on): test: planted panic in LOOKUP"); got != n {
		t.Errorf("panic value logged %d times for %d panics; log:\n%s", got, n, log)
	}
	if got := strings.Count(log, "panic_test.go"); got != n {
		t.Errorf("stack (panic_test.go) logged %d times for %d panics; log:\n%s", got, n, log)
	}
}
