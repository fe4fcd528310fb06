package fileengine

import (
	"crypto/hmac"
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// Location binding (format v2, docs/design/format-v2.md §4). With
// Options.Binder set, every file header carries the bindings of the
// places (parent directory ID, full encrypted name) the file may be found
// at, and a file is opened only where one of them matches: contents moved
// or copied under another name or into another directory fail with
// bind.ErrMisplaced (EIO), which is what makes a sync-conflict alias
// pointing at another file's contents harmless. A 0-byte backing file has
// no header and so no binding: it reads as an empty file wherever it is
// (emptying a file is deletion, which freshness, §6, covers).
//
// Header changes go through the one File of an inode (Table), so the
// header a File caches is the one on disk: AddBinding and DropBinding
// rewrite it under the File's lock.

// Place is where a file was found: its parent directory's ID and its full
// encrypted name.
type Place = bind.Place

// ErrTooManyLinks is returned by AddBinding for a file that has
// bind.MaxLinks names already (ext4's limit; a file beyond its header's
// slots keeps its names in a links file, links.go), or that has outgrown
// its header in an engine without a LinkStore; link(2) reports it as
// EMLINK.
var ErrTooManyLinks = errors.New("core: file has as many names as the vault can bind")

// errNoPlace: a bound engine's files must be opened with OpenAt.
var errNoPlace = errors.New("core: the vault binds file locations; open its files with OpenAt")

// OpenAt is Open for a file found at place p. In a vault with location
// binding the header must hold p's binding (bind.ErrMisplaced otherwise),
// and a header written later (the first write of an empty file) binds
// the file to p. Without binding p is ignored.
func (e *Engine) OpenAt(b Backing, p Place) (*File, error) {
	return e.open(b, p, true)
}

// Bound reports whether the engine binds files to their places.
func (e *Engine) Bound() bool { return e.bind.bound() }

// checkPlace reports bind.ErrMisplaced unless header h, or its links file
// links (with FlagLinks), binds its file to p.
func (bt boundTo) checkPlace(h *content.Header, links *bind.LinkList, p Place) error {
	if err := bt.b.Check(bind.KindFile, h.FileID[:], p, slots(h, links)); err != nil {
		return fmt.Errorf("core: file contents at this name: %w", err)
	}
	return nil
}

// CheckPlace reports whether the file may be read at place p: an opener
// that finds an already open inode under another name (a hard link, a
// Table shared by two names) checks its own place. Always nil without
// binding and for a file without a header.
func (f *File) CheckPlace(p Place) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return ErrClosed
	}
	if !f.hasHeader {
		return nil
	}
	return f.e.bind.checkFile(f, p)
}

// checkFile is CheckPlace for an open File with a header, under f.mu.
func (bt boundTo) checkFile(f *File, p Place) error { return bt.checkPlace(&f.hdr, f.links, p) }

// AddBinding binds the file to place p as well (first step of a rename or
// a link), keeping at least keepFree slots empty (1 for a link, so that
// the names can still be renamed; 0 for a rename), and makes the header
// durable (fsync) before it returns: the caller renames or links the
// backing entry only after the new place is valid. A file without a
// header gets one now, bound to the place it was opened at and to p. A
// binding already present is not added twice. When the header has no
// slot to give, the bindings move to the file's links file (links.go);
// ErrTooManyLinks beyond bind.MaxLinks. A no-op without binding.
func (f *File) AddBinding(p Place, keepFree int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	return f.e.bind.add(f, p, keepFree)
}

// add is AddBinding under f.mu.
func (bt boundTo) add(f *File, p Place, keepFree int) error {
	if err := f.prepareHeader(false); err != nil {
		return err
	}
	want := bt.b.Sum(bind.KindFile, f.hdr.FileID[:], p)
	if f.links != nil {
		return f.linked.addLink(want)
	}
	h, free := f.hdr, -1
	nfree := 0
	for i, s := range h.Bindings {
		if hmac.Equal(s[:], want[:]) {
			return f.b.Sync()
		}
		if s.IsZero() {
			nfree++
			if free < 0 {
				free = i
			}
		}
	}
	if free < 0 || nfree-1 < keepFree {
		return f.linked.toLinks(want)
	}
	h.Bindings[free] = want
	if _, err := f.writeHeader(h); err != nil {
		return err
	}
	if err := f.b.Sync(); err != nil {
		return fmt.Errorf("core: sync header: %w", err)
	}
	return nil
}

// DropBinding removes place p's binding (last step of a rename, or after
// an unlink of one of several names), unless it is the file's only one.
// It does not fsync: a crash that loses the write leaves the file bound
// to one place more, valid where it is. A no-op without binding, for a
// file without a header and for a place not bound.
func (f *File) DropBinding(p Place) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if !f.hasHeader {
		return nil
	}
	return f.e.bind.drop(f, p)
}

// drop is DropBinding under f.mu, for a file with a header.
func (bt boundTo) drop(f *File, p Place) error {
	want := bt.b.Sum(bind.KindFile, f.hdr.FileID[:], p)
	if f.links != nil {
		return f.linked.dropLink(want)
	}
	h, n, at := f.hdr, 0, -1
	for i, s := range h.Bindings {
		if !s.IsZero() {
			n++
		}
		if hmac.Equal(s[:], want[:]) {
			at = i
		}
	}
	if at < 0 || n < 2 {
		return nil
	}
	h.Bindings[at] = bind.Binding{}
	if kept, err := f.writeHeader(h); err != nil && !kept {
		return err
	}
	return nil
}

// Bindings returns the number of places the file's header binds it to (0
// without binding or without a header). fsck compares it with the file's
// link count: more bindings than names means a crash during a rename,
// link or unlink left a stale one (DropBindingsExcept repairs it).
func (f *File) Bindings() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if !f.hasHeader {
		return 0
	}
	return f.e.bind.count(f)
}

// count is Bindings under f.mu, for a file with a header.
func (boundTo) count(f *File) int {
	if f.links != nil {
		return len(f.links.Bindings)
	}
	n := 0
	for _, s := range f.hdr.Bindings {
		if !s.IsZero() {
			n++
		}
	}
	return n
}

// DropBindingsExcept leaves the file bound to the places keep only, which
// must be every name it has (fsck --repair knows them for a file with one
// link), and makes the header durable. The file must be bound to each of
// them (bind.ErrMisplaced otherwise): it never binds a file anywhere new.
func (f *File) DropBindingsExcept(keep ...Place) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if !f.hasHeader || len(keep) == 0 {
		return nil
	}
	return f.e.bind.dropExcept(f, keep)
}

// dropExcept is DropBindingsExcept under f.mu, for a file with a header.
func (bt boundTo) dropExcept(f *File, keep []Place) error {
	h := f.hdr
	if f.links != nil {
		list := make([]bind.Binding, len(keep))
		for i, p := range keep {
			if err := bt.checkPlace(&h, f.links, p); err != nil {
				return err
			}
			list[i] = bt.b.Sum(bind.KindFile, h.FileID[:], p)
		}
		if len(list) == len(f.links.Bindings) {
			return nil
		}
		return f.linked.setLinks(list, true)
	}
	if len(keep) > content.BindingSlots {
		return ErrTooManyLinks
	}
	var kept [content.BindingSlots]bind.Binding
	for i, p := range keep {
		if err := bt.checkPlace(&h, nil, p); err != nil {
			return err
		}
		kept[i] = bt.b.Sum(bind.KindFile, h.FileID[:], p)
	}
	if kept == h.Bindings {
		return nil
	}
	h.Bindings = kept
	if _, err := f.writeHeader(h); err != nil {
		return err
	}
	if err := f.b.Sync(); err != nil {
		return fmt.Errorf("core: sync header: %w", err)
	}
	return nil
}
