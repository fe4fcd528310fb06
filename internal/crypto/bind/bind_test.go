package bind

import (
	"bytes"
	"errors"
	"testing"
)

func testBinder(t *testing.T) *Binder {
	t.Helper()
	b, err := New(bytes.Repeat([]byte{7}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMatch: a binding matches its own kind, object and place only; every
// field changed alone (what an attacker who moves, copies or swaps an
// object changes) fails.
func TestMatch(t *testing.T) {
	b := testBinder(t)
	id, other := bytes.Repeat([]byte{1}, IDSize), bytes.Repeat([]byte{2}, IDSize)
	p := Place{ParentID: bytes.Repeat([]byte{3}, IDSize), EncName: "name"}
	s := b.Sum(KindFile, id, p)
	if !b.Match(KindFile, id, p, []Binding{{}, s}) {
		t.Fatal("own binding does not match")
	}
	for name, ok := range map[string]bool{
		"kind":      b.Match(KindDir, id, p, []Binding{s}),
		"object":    b.Match(KindFile, other, p, []Binding{s}),
		"parent":    b.Match(KindFile, id, Place{other, p.EncName}, []Binding{s}),
		"name":      b.Match(KindFile, id, Place{p.ParentID, "namf"}, []Binding{s}),
		"name+len":  b.Match(KindFile, id, Place{p.ParentID, "name\x00"}, []Binding{s}),
		"empty set": b.Match(KindFile, id, p, nil),
		"zero slot": b.Match(KindFile, id, p, []Binding{{}}),
	} {
		if ok {
			t.Errorf("changed %s: still matches", name)
		}
	}
	if err := b.Check(KindFile, other, p, []Binding{s}); !errors.Is(err, ErrMisplaced) {
		t.Errorf("Check: %v, want ErrMisplaced", err)
	}
	b.Wipe()
	if b.Match(KindFile, id, p, []Binding{s}) {
		t.Error("matches after Wipe")
	}
}

func TestNewKeySize(t *testing.T) {
	if _, err := New(make([]byte, 31)); !errors.Is(err, ErrKey) {
		t.Fatalf("31-byte key: %v", err)
	}
}
