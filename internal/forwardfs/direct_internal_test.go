package forwardfs

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirectWritersRule: which opens go direct, and when a direct write
// invalidates the kernel's cache (direct.go). Through the mount,
// TestDirectWritersStayCoherent checks what a user sees; on Linux 6.18 the
// kernel also drops a directly written range from the cache itself, so
// there a cached reader beside a direct writer reads fresh bytes even
// without the invalidation, which Linux 6.1 does not do: this test is what
// fails here if the rule is broken.
func TestDirectWritersRule(t *testing.T) {
	alone := func() bool { return true }
	shared := func() bool { return false }
	opens := []struct {
		what  string
		flags uint32
		sole  func() bool
		want  bool
	}{
		{"write-only, alone", unix.O_WRONLY, alone, true},
		{"write-only with append, create and truncate, alone", unix.O_WRONLY | unix.O_APPEND | unix.O_CREAT | unix.O_TRUNC, alone, true},
		{"write-only beside other handles", unix.O_WRONLY, shared, false},
		{"read-write, alone", unix.O_RDWR, alone, false},
		{"read-only, alone", unix.O_RDONLY, alone, false},
		{"read-only beside a direct writer", unix.O_RDONLY, shared, false},
	}
	for _, o := range opens {
		if got := goesDirect(o.flags, o.sole); got != o.want {
			t.Errorf("%s: direct %v, want %v", o.what, got, o.want)
		}
	}

	if needsInvalidation(4096, alone) {
		t.Error("a direct write with no other handle open is invalidated")
	}
	if needsInvalidation(0, shared) {
		t.Error("an empty write is invalidated")
	}
	if !needsInvalidation(100, shared) {
		t.Error("a direct write beside another handle is not invalidated")
	}
}
