package forwardfs

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirectWritersDecide: the rule of direct.go, decision by decision.
// (Through the mount, TestDirectWritersStayCoherent checks what a user
// sees; on Linux 6.18 the kernel also drops a directly written range from
// the cache itself, so there a cached reader beside a direct writer reads
// fresh bytes even without the rule, which Linux 6.1 does not do.)
func TestDirectWritersDecide(t *testing.T) {
	var d directWriters
	a, b := new(openFile), new(openFile)
	alone := func() bool { return true }
	shared := func() bool { return false }
	steps := []struct {
		what  string
		of    *openFile
		sole  func() bool
		flags uint32
		want  bool
	}{
		{"write-only, alone", a, alone, unix.O_WRONLY, true},
		{"read-only beside a direct writer", a, shared, unix.O_RDONLY, true},
		{"read-write beside a direct writer", a, shared, unix.O_RDWR, true},
		{"write-only beside cached handles", b, shared, unix.O_WRONLY, false},
		{"read-write, alone", b, alone, unix.O_RDWR, false},
		{"read-only, alone", b, alone, unix.O_RDONLY, false},
		{"write-only with append and create, alone", b, alone, unix.O_WRONLY | unix.O_APPEND | unix.O_CREAT, true},
	}
	for _, s := range steps {
		if got := d.decide(s.of, s.sole, s.flags); got != s.want {
			t.Errorf("%s: direct %v, want %v", s.what, got, s.want)
		}
	}
	// a has two handles that may write (the write-only and the read-write
	// one): after one goes, new handles still go direct; after both, not.
	if d.open[a] != 2 || d.open[b] != 1 {
		t.Fatalf("counts a %d b %d, want 2 and 1", d.open[a], d.open[b])
	}
	d.release(a)
	if !d.decide(a, shared, unix.O_RDONLY) {
		t.Error("a reader beside the remaining direct writer is cached")
	}
	d.release(a)
	if d.decide(a, shared, unix.O_RDONLY) {
		t.Error("a reader after the last direct writer went is still direct")
	}
	d.release(b)
	if len(d.open) != 0 {
		t.Errorf("%d entries left after every release", len(d.open))
	}
}
