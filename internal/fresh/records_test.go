package fresh

import (
	"testing"

	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
)

func dev(b byte) (d [fc.IDSize]byte) {
	d[0] = b
	return d
}

func TestHolds(t *testing.T) {
	id := dev(9)
	x := dev(7)
	file := &fc.Record{Name: "n", Kind: fc.KindFile, ObjectID: id, Gen: 5, Xattrs: x}
	empty := &fc.Record{Name: "n", Kind: fc.KindFile}
	cases := []struct {
		name string
		a    actual
		r    *fc.Record
		want bool
	}{
		{"same", actual{present: true, kind: fc.KindFile, id: id, gen: 5, xattrs: x}, file, true},
		{"newer gen", actual{present: true, kind: fc.KindFile, id: id, gen: 6, xattrs: x}, file, true},
		{"older gen", actual{present: true, kind: fc.KindFile, id: id, gen: 4, xattrs: x}, file, false},
		{"other ID", actual{present: true, kind: fc.KindFile, id: dev(8), gen: 5, xattrs: x}, file, false},
		{"xattrs", actual{present: true, kind: fc.KindFile, id: id, gen: 5}, file, false},
		{"deleted", actual{}, file, false},
		{"empty file written", actual{present: true, kind: fc.KindFile, id: id}, empty, true},
		{"written file emptied to no header", actual{present: true, kind: fc.KindFile}, file, false},
		{"tombstone, absent", actual{}, &fc.Record{Kind: fc.KindDeleted}, true},
		{"tombstone, present", actual{present: true, kind: fc.KindFile}, &fc.Record{Kind: fc.KindDeleted}, false},
		{"dir with zero ID is not a file", actual{present: true, kind: fc.KindDir, id: id}, &fc.Record{Kind: fc.KindDir}, false},
	}
	for _, c := range cases {
		if got := holds(c.a, c.r); got != c.want {
			t.Errorf("%s: holds = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCurrent: a record replaces another device's record it names in Over
// at that stamp or later; records that do not see each other are both
// current (a conflict).
func TestCurrent(t *testing.T) {
	a, b, c := dev(1), dev(2), dev(3)
	ra := ref{a, &fc.Record{Stamp: 4}}
	rb := ref{b, &fc.Record{Stamp: 9, Over: []fc.Stamp{{Device: a, Counter: 4}}}}
	rc := ref{c, &fc.Record{Stamp: 2, Over: []fc.Stamp{{Device: a, Counter: 3}}}}
	cur, old := current([]ref{ra, rb, rc})
	if len(cur) != 2 || cur[0].dev != b || cur[1].dev != c || len(old) != 1 || old[0].dev != a {
		t.Fatalf("current = %v, old = %v", cur, old)
	}
}
