package engine

import (
	"sync"
	"sync/atomic"
)

// Changes is told, by (directory ID, backing name), what each operation
// of the engine changed in CIPHERDIR, once the change is made: freshness
// (internal/fresh) records those names in its batches. It is chosen once
// from the config (SetChanges; nil without the feature flag "Freshness"),
// so that a vault without freshness pays nothing for it.
//
// Why here and not at the syscalls: the engine knows each change's
// directory ID and name, which is what freshness records; a syscall only
// knows fds, whose paths would have to be found again.
type Changes interface {
	// Touched: name of dirID changed (its xattrs or links, or a change
	// the engine does not tell apart).
	Touched(dirID []byte, name string)
	// Wrote: the contents of the file at name of dirID changed (a
	// write, truncate or hole punch); nothing else of it did.
	Wrote(dirID []byte, name string)
	// Made: name of dirID was created (or replaced): what it is now is
	// the disk's to say.
	Made(dirID []byte, name string)
	// Created: name of dirID is a regular file this device just created
	// (it did not exist): empty, with no xattrs. From here on this
	// device tells each change of it (Wrote, Header, Touched), so that
	// freshness can record what it is without reading it back.
	Created(dirID []byte, name string)
	// MadeDir: name of dirID is a directory this device just made (it
	// did not exist) with ID id: no xattrs, until this device tells
	// otherwise (Touched for its xattrs, through the locator), so that
	// freshness can record it without reading it back.
	MadeDir(dirID []byte, name string, id []byte)
	// Removed: this device unlinked or removed name of dirID.
	Removed(dirID []byte, name string)
	// Renamed: from of fromID now is to of toID (exchange: the two
	// swapped).
	Renamed(fromID []byte, from string, toID []byte, to string, exchange bool)
	// Header: this device wrote the header (fileID, gen) of the file at
	// name of dirID.
	Header(dirID []byte, name string, fileID []byte, gen uint64)
	// Gone: the directory with ID dirID was removed (or replaced by a
	// rename): the names told in it need no record.
	Gone(dirID []byte)
	// All: a change the engine cannot name (a repair by fd): record
	// every directory.
	All()
	// Batches counts the batches that took the changes told so far: an
	// open file tells its first content change after each (File.changed).
	Batches() *atomic.Uint64
}

// changes is the vault's Changes with the directory locator it feeds
// (locate.go). A nil *changes tells nothing.
type changes struct {
	c       Changes
	batches *atomic.Uint64
	links   dirLinks
}

// SetChanges makes v tell c what each operation changes, and learn where
// its directories lie (Locate). The session calls it once, right after
// New and before any door uses v.
func (v *Vault) SetChanges(c Changes) {
	v.changes = &changes{c: c, batches: c.Batches(), links: dirLinks{up: map[string]dirLink{}, down: map[dirLink]string{}}}
}

func (c *changes) touched(dirID []byte, name string) {
	if c != nil {
		c.c.Touched(dirID, name)
	}
}

// learn records that directory id lies at name of parent.
func (c *changes) learn(id, parent []byte, name string) {
	if c != nil {
		c.links.learn(id, parent, name)
	}
}

// all tells a change the engine cannot name.
func (c *changes) all() {
	if c != nil {
		c.c.All()
	}
}

// made notes a new entry: what it is is the disk's to say.
func (c *changes) made(dirID []byte, name string) {
	if c != nil {
		c.c.Made(dirID, name)
	}
}

// madeDir notes directory id, which this device just made at name of
// dirID (mkdir never replaces an entry): the locator learns where it
// lies.
func (c *changes) madeDir(dirID []byte, name string, id []byte) {
	if c != nil {
		c.links.learn(id, dirID, name)
		c.c.MadeDir(dirID, name, id)
	}
}

// created notes a new regular file this device created at name of dirID,
// open as f. The creation notes the name for the batch to come, so f's
// first write there need not (changed): one call fewer per new file. The
// window is read before the creation is told: if a batch takes it in
// between, the first write is told in the next window.
func (c *changes) created(dirID []byte, name string, f *File) {
	if c != nil {
		g := c.batches.Load() + 1
		c.c.Created(dirID, name)
		f.places.noted.Store(g)
	}
}

// removed notes a removed entry (and forgets a directory there).
func (c *changes) removed(dirID []byte, name string) {
	if c == nil {
		return
	}
	c.c.Removed(dirID, name)
	if id := c.links.drop(dirID, name); id != "" {
		c.c.Gone([]byte(id))
	}
}

func (c *changes) renamed(fromID []byte, from string, toID []byte, to string, exchange bool) {
	if c == nil {
		return
	}
	gone := c.links.renamed(fromID, from, toID, to, exchange)
	c.c.Renamed(fromID, from, toID, to, exchange)
	if gone != "" {
		c.c.Gone([]byte(gone))
	}
}

// self notes directory id's own entry in its parent (its xattrs); a
// directory the locator does not know makes the next batch record all.
// The root has no entry: nothing.
func (c *changes) self(id []byte) {
	if c == nil {
		return
	}
	l, ok, root := c.links.of(id)
	switch {
	case root:
	case ok:
		c.c.Touched([]byte(l.parent), l.name)
	default:
		c.c.All()
	}
}

// link is where entry n of d lies, as changes are told.
func (d *Dir) link(n Name) dirLink { return dirLink{string(d.id), n.Backing} }

// filePlaces is where an open file lies, as the engine's own operations
// say (open, create, rename, link, unlink): the names its changes are
// told at. mu guards locs; noted is the batch count + 1 of its last
// content change told (File.changed).
type filePlaces struct {
	mu    sync.Mutex
	locs  []dirLink
	noted atomic.Uint64
}

// add notes that the file is (also) at l.
func (p *filePlaces) add(l dirLink) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.locs {
		if x == l {
			return
		}
	}
	p.locs = append(p.locs, l)
}

// move replaces from with to (to "": from is gone).
func (p *filePlaces) move(from, to dirLink) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.locs[:0]
	for _, x := range p.locs {
		if x != from && x != to {
			out = append(out, x)
		}
	}
	if to.name != "" {
		out = append(out, to)
	}
	p.locs = out
}

// each calls fn for each place, without the lock (fn tells freshness,
// which takes its own). A file has one place but for hard links: the copy
// fits on the stack.
func (p *filePlaces) each(fn func(dirLink)) {
	var buf [2]dirLink
	p.mu.Lock()
	locs := append(buf[:0], p.locs...)
	p.mu.Unlock()
	for _, l := range locs {
		fn(l)
	}
}

// changed tells the file's first content change since the last batch:
// on the write path it costs two atomic loads.
func (f *File) changed() {
	c := f.v.changes
	if c == nil {
		return
	}
	g := c.batches.Load() + 1
	if f.places.noted.Load() == g {
		return
	}
	f.places.noted.Store(g)
	f.places.each(func(l dirLink) { c.c.Wrote([]byte(l.parent), l.name) })
}

// headerWritten tells the header the file engine wrote for f.
func (f *File) headerWritten(id []byte, gen uint64) {
	c := f.v.changes
	f.places.each(func(l dirLink) { c.c.Header([]byte(l.parent), l.name, id, gen) })
}
