package fresh

import (
	"sync"

	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
)

// dirID is a directory ID as noted.
type dirID = [fc.IDSize]byte

// notedChanges is what this device changed since the last batch: the
// (directory ID, backing name) pairs the engine told (told.go), each with
// what the device made of it where that is known (expect.go). It owns
// the rule that an operation never waits for a batch or a check: its
// lock is held only to add a name or to take them all, never across I/O.
type notedChanges struct {
	mu sync.Mutex
	// notes: directory ID -> backing name -> what was noted of it. One
	// map for both what was touched and what was made of it, so that a
	// created file (told created, then its header) costs one map entry
	// and lookups in one map: as two maps (touched names, expectations)
	// they were the largest part of what freshness cost an untar's
	// daemon in a perf record (docs/performance.md).
	notes map[dirID]map[string]note
	// carried: the files the last batch took as created (expected.created),
	// by the ID they had then (zero: no header yet). A header told of one
	// in this window marks it created again: a close's header often comes
	// just after a batch took the file's creation and first writes. Any
	// other change told of the name drops it (expectIn, uncreate).
	carried map[dirID]map[string][fc.IDSize]byte
	// goneSince: the directories told gone since the last take. The batch
	// that took names of one before it went does not find it where the
	// engine saw it; it skips it (wentAway) instead of walking the whole
	// tree to look for it, which rm -rf of a tree made a batch do
	// (docs/performance.md, "A batch that walked the tree for removed
	// directories").
	goneSince map[dirID]bool
}

// note is what was noted of one name: that it changed, and, with has,
// what this device made of it (without: the disk's to say).
type note struct {
	e   expected
	has bool
}

// notesOf is what a batch takes: directory ID -> backing name -> note.
type notesOf = map[dirID]map[string]note

// take returns the noted names and starts afresh (a batch records what
// it took; requeue gives back what it could not).
func (c *notedChanges) take() notesOf {
	c.mu.Lock()
	defer c.mu.Unlock()
	notes := c.notes
	c.notes = notesOf{}
	c.carried = map[dirID]map[string][fc.IDSize]byte{}
	c.goneSince = nil
	for d, names := range notes {
		for n, nt := range names {
			if nt.has && nt.e.created && !nt.e.dir {
				if c.carried[d] == nil {
					c.carried[d] = map[string][fc.IDSize]byte{}
				}
				c.carried[d][n] = nt.e.id
			}
		}
	}
	return notes
}

// touch notes name of dir (a long name's sidecar stands for its entry).
func (c *notedChanges) touch(dir dirID, name string) {
	name, ok := recordedName(name)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	names := c.namesIn(dir)
	if _, ok := names[name]; !ok {
		names[name] = note{}
	}
}

// namesIn returns the notes of dir, made if none yet; called with mu held.
// A directory's key is hashed whole at each lookup: callers look it up
// once per change.
func (c *notedChanges) namesIn(dir dirID) map[string]note {
	names := c.notes[dir]
	if names == nil {
		names = map[string]note{}
		c.notes[dir] = names
	}
	return names
}

// gone forgets the names noted in directory dir (removed).
func (c *notedChanges) gone(dir dirID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.notes, dir)
	delete(c.carried, dir)
	if c.goneSince == nil {
		c.goneSince = map[dirID]bool{}
	}
	c.goneSince[dir] = true
}

// wentAway reports whether directory dir was told gone since the last
// take: a batch that took names of it does not look for it.
func (c *notedChanges) wentAway(dir dirID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.goneSince[dir]
}

// expectAt notes name of dir and sets what this device made of it (nil
// forgets that: the disk's to say), under one lock.
func (c *notedChanges) expectAt(dir dirID, name string, e *expected) {
	name, ok := recordedName(name)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expectLocked(dir, name, e)
}

// header notes name of dir and that this device wrote the header (id,
// gen) of the file there. A file this device created in this window (or
// that the last batch took as created: carried) stays known to be
// created if this is its first header or one of the same file.
func (c *notedChanges) header(dir dirID, name string, id [fc.IDSize]byte, gen uint64) {
	name, ok := recordedName(name)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := expected{present: true, known: true, id: id, gen: gen}
	sameFile := func(was [fc.IDSize]byte) bool { return was == id || was == [fc.IDSize]byte{} }
	names := c.namesIn(dir)
	old, ok := names[name]
	if ok && old.has {
		e.created = old.e.created && !old.e.dir && (!old.e.known || sameFile(old.e.id))
	} else if was, ok := c.carried[dir][name]; ok {
		e.created = sameFile(was)
	}
	c.expectIn(names, old, dir, name, &e)
}

// uncreate drops what a creation in this window told of name of dir (it
// has no xattrs): a change not told apart was made to it since.
func (c *notedChanges) uncreate(dir dirID, name string) {
	name, ok := recordedName(name)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if nt, ok := c.notes[dir][name]; ok && nt.has && nt.e.created {
		nt.e.created = false
		c.notes[dir][name] = nt
	}
	delete(c.carried[dir], name)
}

// expectRenamed moves the expectation of a renamed name: the new name is
// what the old one was (or unknown), the old one is gone (or, for an
// exchange, what the new one was).
func (c *notedChanges) expectRenamed(fromDir dirID, from string, toDir dirID, to string, exchange bool) {
	from, ok1 := recordedName(from)
	to, ok2 := recordedName(to)
	c.mu.Lock()
	defer c.mu.Unlock()
	var src, dst *expected
	if nt, ok := c.notes[fromDir][from]; ok1 && ok && nt.has {
		src = &nt.e
	}
	if nt, ok := c.notes[toDir][to]; ok2 && ok && nt.has {
		dst = &nt.e
	}
	if ok2 {
		c.expectLocked(toDir, to, src)
	}
	if ok1 {
		if !exchange {
			dst = &expected{}
		}
		c.expectLocked(fromDir, from, dst)
	}
}

// expectLocked notes name of dir (as touch normalizes them) and sets what
// this device made of it; e nil forgets that (a change whose outcome is
// not known here). Called with c.mu held.
func (c *notedChanges) expectLocked(dir dirID, name string, e *expected) {
	names := c.namesIn(dir)
	c.expectIn(names, names[name], dir, name, e)
}

// expectIn is expectLocked given names, the notes of dir, and old, what
// they hold for name (a caller that has looked both up passes them).
func (c *notedChanges) expectIn(names map[string]note, old note, dir dirID, name string, e *expected) {
	if e == nil || !e.created {
		delete(c.carried[dir], name)
	}
	if e == nil {
		names[name] = note{}
		return
	}
	if old.has && old.e.known && e.known && old.e.id == e.id && old.e.gen > e.gen {
		// Headers of one file only go up: keep the newest seen (and
		// whether it was created here, as e says).
		old.e.created = old.e.created && e.created
		names[name] = old
		return
	}
	names[name] = note{e: *e, has: true}
}

// requeue puts the names of a failed batch back among the noted ones;
// what was noted since wins. A name noted since is no longer trusted as
// created (the change noted since found no expectation to drop the
// mark from).
func (c *notedChanges) requeue(notes notesOf) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for d, names := range notes {
		if c.goneSince[d] {
			continue // gone since the batch took them
		}
		now := c.namesIn(d)
		for n, nt := range names {
			cur, since := now[n]
			switch {
			case !nt.has:
				if !since {
					now[n] = note{}
				}
			case !since:
				c.expectIn(now, note{}, d, n, &nt.e)
			case !cur.has:
				e := nt.e
				e.created = false
				c.expectIn(now, cur, d, n, &e)
			}
			// Else the expectation noted since wins.
		}
	}
}

// list lists the noted names not recorded yet.
func (c *notedChanges) list() []Unrecorded {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Unrecorded
	for d, names := range c.notes {
		for n, nt := range names {
			u := Unrecorded{ID: fc.EncodeID(d[:]), Name: n}
			if e := nt.e; nt.has {
				u.Expect = &UnrecordedExpect{Present: e.present, Known: e.known, Gen: e.gen}
				if e.known {
					u.Expect.ID = e.id[:]
				}
			}
			out = append(out, u)
		}
	}
	return out
}
