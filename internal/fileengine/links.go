package fileengine

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// Files with more names than header slots (design §4, docs/format.md §14).
// A header binds at most content.BindingSlots places, and keeps one slot
// free so that a name can be renamed (add, rename, drop). When a link
// would take the spare slot, the file's bindings move to its links file,
// encryptfs.links.<b64url(fileID)> in the vault's root (bind.LinkList,
// MAC'd under K_links and over the file ID), and the header gets
// content.FlagLinks with its slots zeroed. From then on every link,
// unlink and rename rewrites the links file, atomically (a temporary
// file written and fsynced, renamed over it). When an unlink leaves the
// file with names that fit the header again, they go back into its slots
// and the links file is removed.
//
// Crash safety rests on one invariant: every links file a crash can leave
// (the last durable one, or one of the later rewrites) names every name
// the file durably has. It holds because a binding is added, and made
// durable, before its name is made, and dropped only after the name's
// removal is durable:
//
//   - to the links file (the third name's link): the links file with all
//     bindings is written and the root fsynced, then the header is
//     rewritten with FlagLinks and fsynced, then the link is made. A crash
//     before the header write leaves a links file no header asks for
//     (fsck: orphan-links, removed by --repair); after it, both old names
//     and, once made, the new one are in the links file.
//   - link: the links file with the new binding is written and the root
//     fsynced before the link is made.
//   - rename: the new binding is added as for a link; after the rename
//     and its directory's fsync the old one is dropped (no fsync: if the
//     drop is lost, the file is bound to one place more, valid where it
//     is: stale-binding).
//   - unlink: after the unlink is durable, the binding is dropped (no
//     fsync).
//   - back to the header (an unlink that leaves at most BindingSlots-1
//     names): the header with those bindings in its slots and without
//     FlagLinks is written and fsynced, then the links file removed (no
//     fsync; a links file left behind is orphan-links).
//
// The header binds itself to the links file by FlagLinks under the header
// MAC (it cannot be cleared to fall back to empty slots), and the links
// file to the header by the file ID under its MAC (a links file of
// another file fails). A missing links file fails the file everywhere:
// bind.ErrBadLinks, EIO. An older links file of the same file is a
// rollback, for freshness (design §6) to catch. Cost: a link, an unlink
// or a rename of a file with a links file writes a file of 50 + 16·n bytes
// (n names) in the root and fsyncs the root (one fsync more than with
// slots, wherever the names are); opening such a file reads it.

// LinkStore reads and writes links files. internal/tree implements it over
// the vault's root directory (tree.LinkStore); every write goes through the
// session's backing.FS, so that the crash replay sees it.
type LinkStore interface {
	// Load reads and checks fileID's links file; a missing or bad one
	// is bind.ErrBadLinks.
	Load(fileID content.FileID) (bind.LinkList, error)
	// Store replaces l's links file atomically (a temporary file,
	// written and fsynced, renamed over it); with sync, the root
	// directory is fsynced too, so the new list is durable on return.
	Store(l bind.LinkList, sync bool) error
	// Remove removes fileID's links file, if there is one (not fsynced).
	Remove(fileID content.FileID) error
}

// loadLinks returns the links file of a header with FlagLinks (nil for
// one without).
func (e *Engine) loadLinks(h *content.Header) (*bind.LinkList, error) {
	if h.Flags&content.FlagLinks == 0 {
		return nil, nil
	}
	if e.links == nil {
		return nil, fmt.Errorf("core: %w: no links store", bind.ErrBadLinks)
	}
	l, err := e.links.Load(h.FileID)
	if err != nil {
		return nil, fmt.Errorf("core: links file: %w", err)
	}
	return &l, nil
}

// slots are the bindings a file is checked against: its links file's
// when it has one, else its header's.
func slots(h *content.Header, links *bind.LinkList) []bind.Binding {
	if links != nil {
		return links.Bindings
	}
	return h.Bindings[:]
}

// fileLinks is the links-file side of a File: it owns the invariant
// above (every links file a crash can leave names every name the file
// durably has), moving a file's bindings between its header's slots and
// its links file. Its state is File.links, guarded by File.mu.
type fileLinks struct{ f *File }

// Links reports how many names the file's links file binds (0 without
// one): fsck, to tell a file kept in a links file from one in its header.
func (f *File) Links() (n int, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.links == nil {
		return 0, false
	}
	return len(f.links.Bindings), true
}

// toLinks moves the header's bindings and want to a new links file (the
// third name of a file). Called with mu held for writing.
func (fl fileLinks) toLinks(want bind.Binding) error {
	f := fl.f
	if f.e.links == nil {
		return ErrTooManyLinks
	}
	l := bind.LinkList{FileID: f.hdr.FileID, Gen: 1}
	// A links file left from an earlier time with the file's ID (orphaned
	// by a crash, or by a lost removal) is replaced; its gen is carried
	// on so that gens only grow.
	if old, err := f.e.links.Load(f.hdr.FileID); err == nil {
		l.Gen = old.Gen + 1
	}
	for _, s := range f.hdr.Bindings {
		if !s.IsZero() {
			l.Bindings = append(l.Bindings, s)
		}
	}
	l.Bindings = append(l.Bindings, want)
	if err := f.e.links.Store(l, true); err != nil {
		return err
	}
	h := f.hdr
	h.Flags |= content.FlagLinks
	h.Bindings = [content.BindingSlots]bind.Binding{}
	if restored, err := f.writeHeader(h); err != nil {
		if restored {
			// The old header is back: no header asks for the links
			// file, so it goes again. (Not restored: the header on
			// disk is unknown, and may need it.)
			f.e.links.Remove(h.FileID)
		}
		return err
	}
	if err := f.b.Sync(); err != nil {
		return fmt.Errorf("core: sync header: %w", err)
	}
	f.links = &l
	return nil
}

// addLink adds want to the file's links file and makes it durable.
// Called with mu held for writing.
func (fl fileLinks) addLink(want bind.Binding) error {
	f := fl.f
	if f.links.Has(want) {
		return nil
	}
	if len(f.links.Bindings) >= bind.MaxLinks {
		return ErrTooManyLinks
	}
	l := bind.LinkList{FileID: f.links.FileID, Gen: f.links.Gen + 1,
		Bindings: append(append(make([]bind.Binding, 0, len(f.links.Bindings)+1), f.links.Bindings...), want)}
	if err := f.e.links.Store(l, true); err != nil {
		return err
	}
	f.links = &l
	return nil
}

// dropLink removes want from the file's links file (unless it is the
// last binding), not fsynced; with at most BindingSlots-1 bindings left,
// they go back to the header. Called with mu held for writing.
func (fl fileLinks) dropLink(want bind.Binding) error {
	f := fl.f
	if !f.links.Has(want) || len(f.links.Bindings) < 2 {
		return nil
	}
	kept := make([]bind.Binding, 0, len(f.links.Bindings)-1)
	for _, s := range f.links.Bindings {
		if s != want {
			kept = append(kept, s)
		}
	}
	return fl.setLinks(kept, false)
}

// setLinks makes kept the file's bindings: in the header if they fit
// with a spare slot, else in the links file (fsynced with sync). Called
// with mu held for writing, for a file with a links file.
func (fl fileLinks) setLinks(kept []bind.Binding, sync bool) error {
	f := fl.f
	if len(kept) <= content.BindingSlots-1 {
		return fl.fromLinks(kept)
	}
	l := bind.LinkList{FileID: f.links.FileID, Gen: f.links.Gen + 1, Bindings: kept}
	if err := f.e.links.Store(l, sync); err != nil {
		return err
	}
	f.links = &l
	return nil
}

// fromLinks puts kept (at most BindingSlots-1 bindings) back into the
// header, without FlagLinks, makes the header durable, and only then
// removes the links file. Called with mu held for writing.
func (fl fileLinks) fromLinks(kept []bind.Binding) error {
	f := fl.f
	h := f.hdr
	h.Flags &^= content.FlagLinks
	h.Bindings = [content.BindingSlots]bind.Binding{}
	copy(h.Bindings[:], kept)
	if restored, err := f.writeHeader(h); err != nil && !restored {
		return err
	} else if err != nil {
		return nil // the links file stays in use, as before
	}
	if err := f.b.Sync(); err != nil {
		return fmt.Errorf("core: sync header: %w", err)
	}
	f.links = nil
	// A removal that fails or is lost leaves a links file no header asks
	// for: harmless, and fsck reports it (orphan-links). The names are
	// safe in the header either way, so it is no error of the unlink.
	f.e.links.Remove(h.FileID)
	return nil
}
