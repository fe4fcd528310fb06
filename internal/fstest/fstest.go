// Package fstest holds what the FUSE test suites share: the rule for when a
// test that mounts may skip. The conformance suites themselves are in the
// subpackages posix (POSIX semantics) and fsx (random operations checked
// against a model).
package fstest

import (
	"os"
	"testing"
)

// RequireFUSE skips t where FUSE is missing (no /dev/fuse), the only reason
// a mounting test may skip, and fails it instead under CI=true, where a
// skipped FUSE test would pass off as a passed one.
func RequireFUSE(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no FUSE: %v", err)
		}
		t.Skipf("no FUSE: %v", err)
	}
}
