package forwardfs

import "testing"

// TestDropBehindRanges: which ranges a write-only handle drops, write by
// write: whole pages below the current write, once a sequential run is a
// step past the last drop; a write elsewhere starts a new run; nothing
// while a drop is in flight or while another handle is open.
func TestDropBehindRanges(t *testing.T) {
	const mib = 1 << 20
	type step struct {
		off, n       int64
		sole         bool
		done         bool // the drop in flight ends before this write
		from, length int64
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"sequential", []step{
			{off: 0, n: 4 * mib, sole: true},
			{off: 4 * mib, n: 4 * mib, sole: true},
			{off: 8 * mib, n: mib, sole: true, from: 0, length: 8 * mib},
			{off: 9 * mib, n: 8 * mib, sole: true, done: true},
			{off: 17 * mib, n: mib, sole: true, from: 8 * mib, length: 9 * mib},
		}},
		{"unaligned writes drop whole pages below the current one", []step{
			{off: 0, n: 8*mib + 100, sole: true},
			{off: 8*mib + 100, n: 10, sole: true, from: 0, length: 8 * mib},
		}},
		{"a jump starts a new run", []step{
			{off: 0, n: 6 * mib, sole: true},
			{off: 100*mib + 5, n: 6 * mib, sole: true},
			{off: 106*mib + 5, n: mib, sole: true},
			{off: 107*mib + 5, n: mib, sole: true},
			{off: 108*mib + 5, n: mib, sole: true, from: 100 * mib, length: 8 * mib},
		}},
		{"one drop in flight at a time", []step{
			{off: 0, n: 8 * mib, sole: true},
			{off: 8 * mib, n: 8 * mib, sole: true, from: 0, length: 8 * mib},
			{off: 16 * mib, n: 8 * mib, sole: true},
			{off: 24 * mib, n: mib, sole: true, done: true, from: 8 * mib, length: 16 * mib},
		}},
		{"another handle open", []step{
			{off: 0, n: 8 * mib, sole: true},
			{off: 8 * mib, n: mib, sole: false},
			{off: 9 * mib, n: mib, sole: true, from: 0, length: 9 * mib},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := dropBehind{page: 4096}
			for i, s := range tc.steps {
				if s.done {
					d.done()
				}
				from, length := d.wrote(s.off, s.n, func() bool { return s.sole })
				if from != s.from || length != s.length {
					t.Fatalf("write %d (%d bytes at %d): drop [%d, +%d), want [%d, +%d)", i, s.n, s.off, from, length, s.from, s.length)
				}
			}
		})
	}
}
