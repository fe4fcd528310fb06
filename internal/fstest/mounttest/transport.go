package mounttest

import (
	"os"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/internal/transport"
)

// Transport is the transport the tests mount with: $ENCRYPTFS_TRANSPORT
// (as the CLI reads it), so that scripts/test.sh runs the FUSE suites on
// both transports. NewVault turns io_uring on for a uring mount
// (RequireURing).
func Transport(t testing.TB) transport.Mode {
	mode, err := transport.ParseMode(os.Getenv("ENCRYPTFS_TRANSPORT"))
	if err != nil {
		t.Fatal(err)
	}
	return mode
}

// RequireURing is fstest.RequireFUSE for a test that mounts over FUSE over
// io_uring: it turns the kernel's enable_uring on (as root) or skips, and
// fails instead under CI=true.
func RequireURing(t testing.TB) {
	t.Helper()
	fstest.RequireFUSE(t)
	if err := transport.Enable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %v", err)
		}
		t.Skip(err)
	}
}
