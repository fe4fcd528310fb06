// Package mounttest is what the tests that mount share: a forward vault
// mounted in a temp dir (NewVault), the check that no test left a mount
// behind (Main, Track), and small helpers. Only tests import it; it lives
// outside the packages under test so that the tests of internal/mount and
// of the FUSE frontends (internal/forwardfs, internal/reversefs), which
// mount through internal/mount, can all use it.
package mounttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// mounts records every mount point this test process used. It is the one
// piece of package state: the record of one test binary's own mounts,
// which Main checks after the tests, when no test can pass it along.
var mounts sync.Map

// Track records dir as a mount point of this test process, for Main's
// check. Call it before mounting.
func Track(dir string) { mounts.Store(dir, true) }

// Main runs the tests (call it from TestMain) and fails the suite if a
// test left one of its mounts behind.
func Main(m *testing.M) {
	code := m.Run()
	if left := leftMounts(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "mounts left behind: %v\n", left)
		code = 1
	}
	os.Exit(code)
}

// leftMounts lists our mount points still in /proc/mounts.
func leftMounts() []string {
	b, _ := os.ReadFile("/proc/mounts")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		if _, ok := mounts.Load(f[1]); ok {
			out = append(out, l)
		}
	}
	return out
}

// RequireRoot skips a test that needs root (to act as a second user or
// to mount a tmpfs), except under CI=true, where it fails instead.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but not root")
		}
		t.Skip("needs root")
	}
}

// SearchableDir is a fresh directory whose ancestors uid 65534 can
// search, for a mount point that another user reaches.
func SearchableDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "encryptfs-mnt-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.Remove(dir) })
	return dir
}

// Must fails t on a non-nil err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BackingFiles lists the entries of dir in CIPHERDIR except the reserved
// encryptfs.* ones.
func BackingFiles(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	Must(t, err)
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "encryptfs.") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// SyncWriter is a log sink safe for the server's goroutines; the zero
// value is ready.
type SyncWriter struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (w *SyncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// String returns everything written so far.
func (w *SyncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
