// Package fstest holds what the FUSE test suites share: the rule for when a
// test that mounts may skip. The conformance suites themselves are in the
// subpackages posix (POSIX semantics) and fsx (random operations checked
// against a model).
package fstest

import (
	"os"
	"os/exec"
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

// RequireTool returns the path of program name, a Debian package that
// scripts/setup.sh installs: a missing one skips t, except under CI=true,
// where it fails t (CI installs it, so a skip would pass off as a pass).
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s is missing (scripts/setup.sh installs it): %v", name, err)
		}
		t.Skipf("%s is not installed (apt-get install %s)", name, name)
	}
	return p
}
