package fileengine

import (
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// binding is the engine's location-binding strategy (bound.go), chosen
// once in NewEngine from Options.Binder: unbound (v1 and format-2 vaults
// without binding) or boundTo. The open, header and link paths call it
// instead of asking whether the engine binds; none of its methods is on
// a per-chunk path. The File methods run under f.mu, for a File with a
// header.
type binding interface {
	// bound reports whether files are bound to their places.
	bound() bool
	// opening is the check made before a backing file is opened: a bound
	// engine's files must be opened with a place (at).
	opening(at bool) error
	// admit loads header h's links file and checks that the file may be
	// opened at p.
	admit(e *Engine, h *content.Header, p Place) (*bind.LinkList, error)
	// stamp binds a new header to p, the place its file was opened at.
	stamp(h *content.Header, p Place)
	checkFile(f *File, p Place) error
	add(f *File, p Place, keepFree int) error
	drop(f *File, p Place) error
	count(f *File) int
	dropExcept(f *File, keep []Place) error
}

// newBinding is the strategy for binder (nil: unbound).
func newBinding(binder *bind.Binder) binding {
	if binder == nil {
		return unbound{}
	}
	return boundTo{binder}
}

// unbound: no location binding; a place is ignored and every binding
// operation is a no-op.
type unbound struct{}

func (unbound) bound() bool                  { return false }
func (unbound) opening(bool) error           { return nil }
func (unbound) stamp(*content.Header, Place) {}
func (unbound) admit(*Engine, *content.Header, Place) (*bind.LinkList, error) {
	return nil, nil
}
func (unbound) checkFile(*File, Place) error    { return nil }
func (unbound) add(*File, Place, int) error     { return nil }
func (unbound) drop(*File, Place) error         { return nil }
func (unbound) count(*File) int                 { return 0 }
func (unbound) dropExcept(*File, []Place) error { return nil }

// boundTo: every header binds its file to its places (bound.go).
type boundTo struct{ b *bind.Binder }

func (boundTo) bound() bool { return true }

func (boundTo) opening(at bool) error {
	if !at {
		return errNoPlace
	}
	return nil
}

func (bt boundTo) admit(e *Engine, h *content.Header, p Place) (*bind.LinkList, error) {
	links, err := e.loadLinks(h)
	if err != nil {
		return nil, err
	}
	if err := bt.checkPlace(h, links, p); err != nil {
		return nil, err
	}
	return links, nil
}

func (bt boundTo) stamp(h *content.Header, p Place) {
	h.Bindings[0] = bt.b.Sum(bind.KindFile, h.FileID[:], p)
}
