package keyslot

import (
	"crypto/rand"
	"slices"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
)

func listIDs(c *config.Config) []int {
	var ids []int
	for _, si := range List(c) {
		ids = append(ids, si.ID)
	}
	return ids
}

// addKeyfileSlot adds a keyfile slot with the given ID (0: the next one)
// through config.AddSlot, which takes an ID as a config edited elsewhere
// may have it.
func addKeyfileSlot(t *testing.T, f *fixture, id int) int {
	t.Helper()
	h := config.SlotHeader{ID: id, Type: config.SlotKeyfile, Label: "kf", Salt: make([]byte, config.SlotSaltSize)}
	secret, err := config.HKDFSecret(h, testKeyfile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.c.AddSlot(f.master, h, secret, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSlotIDsNotReused: a new slot gets one more than the highest ID, so
// a removed slot's ID is not given again while a slot above it remains;
// past MaxSlotID the lowest free one. List is in ID order whatever the
// stored order.
func TestSlotIDsNotReused(t *testing.T) {
	f := newFixture(t) // slots 1..4
	if err := Remove(f.c, f.master, 2); err != nil {
		t.Fatal(err)
	}
	id, err := Add(f.c, f.master, NewSlot{Type: config.SlotKeyfile, Label: "new", Keyfile: testKeyfile}, rand.Reader)
	if err != nil || id != 5 {
		t.Fatalf("after removing slot 2 of 1..4 the new slot is %d (%v), want 5", id, err)
	}
	// Stored order 1 3 4 5 2: List sorts.
	if got := addKeyfileSlot(t, f, 2); got != 2 {
		t.Fatal(got)
	}
	if got, want := listIDs(f.c), []int{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("List IDs %v, want %v", got, want)
	}
	if f.c.Slots[len(f.c.Slots)-1].Header.ID != 2 {
		t.Fatal("the test needs a stored order other than the ID order")
	}
	// At the top of the range the lowest free ID is taken.
	addKeyfileSlot(t, f, config.MaxSlotID)
	if err := Remove(f.c, f.master, 3); err != nil {
		t.Fatal(err)
	}
	if got := addKeyfileSlot(t, f, 0); got != 3 {
		t.Fatalf("next ID after %d: %d, want the lowest free, 3", config.MaxSlotID, got)
	}
}
