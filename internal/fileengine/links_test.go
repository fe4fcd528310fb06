package fileengine

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// memLinks is a LinkStore in memory that keeps the sealed bytes, as the
// root directory would, and counts durable stores.
type memLinks struct {
	b      *bind.Binder
	files  map[content.FileID][]byte
	synced int
}

func (m *memLinks) Load(id content.FileID) (bind.LinkList, error) {
	raw, ok := m.files[id]
	if !ok {
		return bind.LinkList{}, fmt.Errorf("%w: missing", bind.ErrBadLinks)
	}
	return m.b.OpenLinks(raw, id[:])
}

func (m *memLinks) Store(l bind.LinkList, sync bool) error {
	m.files[l.FileID] = m.b.SealLinks(l)
	if sync {
		m.synced++
	}
	return nil
}

func (m *memLinks) Remove(id content.FileID) error {
	delete(m.files, id)
	return nil
}

// newLinksEngine is a bound engine over memLinks (nil store: none).
func newLinksEngine(t *testing.T, withStore bool) (*Engine, *memLinks) {
	t.Helper()
	b, err := bind.New(bytes.Repeat([]byte{3}, bind.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	suite, err := content.NewBoundSuite(content.AES256GCM, 4096, bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32))
	if err != nil {
		t.Fatal(err)
	}
	m := &memLinks{b: b, files: map[content.FileID][]byte{}}
	o := Options{Binder: b}
	if withStore {
		o.Links = m
	}
	return NewEngine(suite, o), m
}

func linkPlace(i int) Place {
	return Place{ParentID: bytes.Repeat([]byte{byte(i)}, 16), EncName: fmt.Sprintf("name%d", i)}
}

// TestLinksTransitions: AddBinding for links (keepFree 1) uses the
// header for two names, moves everything to the links file at the third
// (durably, header flag set, slots zero), keeps adding there; DropBinding
// shrinks the list and goes back to the header at two names; every
// bound place opens, others are misplaced.
func TestLinksTransitions(t *testing.T) {
	e, m := newLinksEngine(t, true)
	mb := NewMemBacking()
	f, err := e.OpenAt(mb, linkPlace(0))
	mustL(t, err)
	_, err = f.WriteAt([]byte("contents"), 0)
	mustL(t, err)
	for i := 1; i <= 4; i++ {
		mustL(t, f.AddBinding(linkPlace(i), 1))
		_, inLinks := f.Links()
		if want := i >= 2; inLinks != want {
			t.Fatalf("after name %d: links file %v, want %v", i+1, inLinks, want)
		}
	}
	if n := f.Bindings(); n != 5 {
		t.Fatalf("Bindings() = %d, want 5", n)
	}
	if m.synced != 3 {
		t.Fatalf("durable links stores: %d, want 3 (names 3, 4, 5)", m.synced)
	}
	mustL(t, f.Close())
	reopen := func(p Place) (*File, error) { return e.OpenAt(NewMemBackingFrom(mb.Bytes()), p) }
	for i := range 5 {
		g, err := reopen(linkPlace(i))
		if err != nil {
			t.Fatalf("open at name %d: %v", i, err)
		}
		g.Close()
	}
	if _, err := reopen(linkPlace(9)); !errors.Is(err, bind.ErrMisplaced) {
		t.Fatalf("open at an unbound place: %v, want ErrMisplaced", err)
	}
	h, err := e.suite.ParseHeader(mb.Bytes()[:content.HeaderSizeV2])
	mustL(t, err)
	if h.Flags&content.FlagLinks == 0 || h.Bindings != [content.BindingSlots]bind.Binding{} {
		t.Fatalf("header: flags %#x, slots %x", h.Flags, h.Bindings)
	}

	f, err = reopen(linkPlace(0))
	mustL(t, err)
	mustL(t, f.DropBinding(linkPlace(4)))
	mustL(t, f.DropBinding(linkPlace(3)))
	if _, inLinks := f.Links(); !inLinks {
		t.Fatal("three names: left the links file")
	}
	mustL(t, f.DropBinding(linkPlace(2)))
	if _, inLinks := f.Links(); inLinks || len(m.files) != 0 {
		t.Fatalf("two names: links file %v, stored %d", inLinks, len(m.files))
	}
	for _, i := range []int{0, 1} {
		if err := f.CheckPlace(linkPlace(i)); err != nil {
			t.Fatalf("name %d after going back: %v", i, err)
		}
	}
	if err := f.CheckPlace(linkPlace(2)); !errors.Is(err, bind.ErrMisplaced) {
		t.Fatalf("dropped name: %v, want ErrMisplaced", err)
	}
	f.Close()
}

// TestLinksNoStore: without a LinkStore the third name is EMLINK, and a
// header with FlagLinks cannot be opened.
func TestLinksNoStore(t *testing.T) {
	e, _ := newLinksEngine(t, false)
	f, err := e.OpenAt(NewMemBacking(), linkPlace(0))
	mustL(t, err)
	_, err = f.WriteAt([]byte("x"), 0)
	mustL(t, err)
	mustL(t, f.AddBinding(linkPlace(1), 1))
	if err := f.AddBinding(linkPlace(2), 1); !errors.Is(err, ErrTooManyLinks) {
		t.Fatalf("third name without a store: %v, want ErrTooManyLinks", err)
	}
	f.Close()

	e2, _ := newLinksEngine(t, true)
	mb := NewMemBacking()
	f, err = e2.OpenAt(mb, linkPlace(0))
	mustL(t, err)
	_, err = f.WriteAt([]byte("x"), 0)
	mustL(t, err)
	for i := 1; i <= 2; i++ {
		mustL(t, f.AddBinding(linkPlace(i), 1))
	}
	f.Close()
	if _, err := e.OpenAt(NewMemBackingFrom(mb.Bytes()), linkPlace(0)); !errors.Is(err, bind.ErrBadLinks) {
		t.Fatalf("LINKS header without a store: %v, want ErrBadLinks", err)
	}
}

func mustL(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
