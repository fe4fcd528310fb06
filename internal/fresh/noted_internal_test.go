package fresh

import (
	"maps"
	"testing"
)

// TestCreatedCarried: a file this device created stays known whole (no
// xattrs, the file of its last header) across the batch that took its
// creation, for the header its close writes after that batch; and only
// while nothing but its contents changed.
func TestCreatedCarried(t *testing.T) {
	d := dirID{1}
	id, other := [16]byte{2}, [16]byte{3}
	created := func(c *notedChanges, name string) bool {
		t.Helper()
		nt, ok := c.notes[d][name]
		return ok && nt.has && nt.e.created
	}
	for _, tc := range []struct {
		name string
		// between runs after the batch that took the creation, before
		// the close's header (id, 2).
		between func(c *notedChanges)
		header  [16]byte
		want    bool
	}{
		{"header of the file", func(*notedChanges) {}, id, true},
		{"header of another file", func(*notedChanges) {}, other, false},
		{"xattr set", func(c *notedChanges) { c.uncreate(d, "f") }, id, false},
		{"renamed away and back", func(c *notedChanges) {
			c.expectRenamed(d, "f", d, "g", false)
			c.expectRenamed(d, "g", d, "f", false)
		}, id, false},
		{"removed and made", func(c *notedChanges) {
			c.expectAt(d, "f", &expected{})
			c.expectAt(d, "f", nil)
		}, id, false},
		{"a second batch", func(c *notedChanges) { c.take() }, id, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &notedChanges{}
			c.take()
			c.expectAt(d, "f", &expected{present: true, created: true})
			c.header(d, "f", id, 1)
			if !created(c, "f") {
				t.Fatal("a created file's first header dropped its creation")
			}
			c.take()
			tc.between(c)
			c.header(d, "f", tc.header, 2)
			if got := created(c, "f"); got != tc.want {
				t.Fatalf("created after the batch: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRequeue: the names of a failed batch come back among the noted
// ones; an expectation noted since wins, and a name changed since without
// one gets the old expectation back, no longer trusted as created.
func TestRequeue(t *testing.T) {
	d := dirID{1}
	id := [16]byte{2}
	c := &notedChanges{}
	c.take()
	c.expectAt(d, "kept", &expected{present: true, created: true})
	c.touch(d, "plain")
	c.expectAt(d, "newer", &expected{present: true, created: true})
	c.expectAt(d, "changed", &expected{present: true, created: true})
	c.header(d, "changed", id, 3)
	failed := c.take()
	c.expectAt(d, "newer", &expected{}) // removed since
	c.touch(d, "changed")               // written since
	c.uncreate(d, "changed")
	c.requeue(failed)
	want := map[string]note{
		"kept":    {e: expected{present: true, created: true}, has: true},
		"plain":   {},
		"newer":   {e: expected{}, has: true},
		"changed": {e: expected{present: true, known: true, id: id, gen: 3}, has: true},
	}
	if got := c.notes[d]; !maps.Equal(got, want) {
		t.Fatalf("after requeue:\n%+v\nwant\n%+v", got, want)
	}
	if _, ok := c.carried[d]["changed"]; ok {
		t.Fatal("a name changed since is still carried as created")
	}
}

// TestGoneSinceTake: a directory told gone after a batch took its names
// is one that batch does not look for, and a failed batch does not give
// its names back; the next take forgets it.
func TestGoneSinceTake(t *testing.T) {
	d, kept := dirID{1}, dirID{2}
	c := &notedChanges{}
	c.take()
	c.touch(d, "f")
	c.touch(kept, "g")
	failed := c.take()
	if c.wentAway(d) {
		t.Fatal("gone before it was told")
	}
	c.gone(d)
	if !c.wentAway(d) || c.wentAway(kept) {
		t.Fatalf("went away: %v and %v, want true and false", c.wentAway(d), c.wentAway(kept))
	}
	c.requeue(failed)
	if _, ok := c.notes[d]; ok {
		t.Fatal("a failed batch gave back the names of a directory gone since")
	}
	if _, ok := c.notes[kept]["g"]; !ok {
		t.Fatal("a failed batch lost the names of a directory still there")
	}
	c.take()
	if c.wentAway(d) {
		t.Fatal("still gone after the next take")
	}
}
