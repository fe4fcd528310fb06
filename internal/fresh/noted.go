package fresh

import (
	"sync"

	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
)

// dirID is a directory ID as noted.
type dirID = [fc.IDSize]byte

// notedChanges is what this device changed since the last batch: the
// (directory ID, backing name) pairs the engine told (told.go), and what
// the device made of each (expect.go). It owns the rule that an
// operation never waits for a batch or a check: its lock is held only
// to add a name or to take them all, never across I/O.
type notedChanges struct {
	mu      sync.Mutex
	touched map[dirID]map[string]bool     // directory ID -> backing names
	expects map[dirID]map[string]expected // what this device made of them (expect.go)
	// carried: the files the last batch took as created (expected.created),
	// by the ID they had then (zero: no header yet). A header told of one
	// in this window marks it created again: a close's header often comes
	// just after a batch took the file's creation and first writes. Any
	// other change told of the name drops it (expectLocked, uncreate).
	carried map[dirID]map[string][fc.IDSize]byte
}

// take returns the noted names and expectations and starts afresh (a
// batch records what it took; requeue gives back what it could not).
func (c *notedChanges) take() (map[dirID]map[string]bool, map[dirID]map[string]expected) {
	c.mu.Lock()
	defer c.mu.Unlock()
	touched, expects := c.touched, c.expects
	c.touched, c.expects = map[dirID]map[string]bool{}, map[dirID]map[string]expected{}
	c.carried = map[dirID]map[string][fc.IDSize]byte{}
	for d, names := range expects {
		for n, e := range names {
			if e.created && !e.dir {
				if c.carried[d] == nil {
					c.carried[d] = map[string][fc.IDSize]byte{}
				}
				c.carried[d][n] = e.id
			}
		}
	}
	return touched, expects
}

// touch notes name of dir (a long name's sidecar stands for its entry).
func (c *notedChanges) touch(dir dirID, name string) {
	name, ok := recordedName(name)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touchLocked(dir, name)
}

// touchLocked is touch of a recorded name with mu held.
func (c *notedChanges) touchLocked(dir dirID, name string) {
	names := c.touched[dir] // one lookup by directory: its key is hashed whole
	if names == nil {
		names = map[string]bool{}
		c.touched[dir] = names
	}
	names[name] = true
}

// gone forgets the names noted in directory dir (removed).
func (c *notedChanges) gone(dir dirID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.touched, dir)
	delete(c.expects, dir)
	delete(c.carried, dir)
}

// expectAt notes name of dir (touch) and sets its expectation (nil
// forgets it), under one lock.
func (c *notedChanges) expectAt(dir dirID, name string, e *expected) {
	name, ok := recordedName(name)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touchLocked(dir, name)
	c.expectLocked(dir, name, e)
}

// header notes name of dir (touch) and that this device wrote the header
// (id, gen) of the file there. A file this device created in this window (or that the
// last batch took as created: carried) stays known to be created if this
// is its first header or one of the same file.
func (c *notedChanges) header(dir dirID, name string, id [fc.IDSize]byte, gen uint64) {
	name, ok := recordedName(name)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touchLocked(dir, name)
	e := expected{present: true, known: true, id: id, gen: gen}
	sameFile := func(was [fc.IDSize]byte) bool { return was == id || was == [fc.IDSize]byte{} }
	names := c.expects[dir]
	if old, ok := names[name]; ok {
		e.created = old.created && !old.dir && (!old.known || sameFile(old.id))
	} else if was, ok := c.carried[dir][name]; ok {
		e.created = sameFile(was)
	}
	c.expectIn(names, dir, name, &e)
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
	if e, ok := c.expects[dir][name]; ok && e.created {
		e.created = false
		c.expects[dir][name] = e
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
	if e, ok := c.expects[fromDir][from]; ok1 && ok {
		src = &e
	}
	if e, ok := c.expects[toDir][to]; ok2 && ok {
		dst = &e
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

// expectLocked sets the expectation of name in dir (both as touch normalizes
// them); e nil forgets it (a change whose outcome is not known here).
// Called with c.mu held.
func (c *notedChanges) expectLocked(dir dirID, name string, e *expected) {
	c.expectIn(c.expects[dir], dir, name, e)
}

// expectIn is expectLocked given names, c.expects[dir] (nil if none yet):
// a directory's key is hashed whole at each lookup, so a caller that has
// looked it up already passes what it found.
func (c *notedChanges) expectIn(names map[string]expected, dir dirID, name string, e *expected) {
	if e == nil || !e.created {
		delete(c.carried[dir], name)
	}
	if e == nil {
		delete(names, name) // a nil map: nothing to delete
		return
	}
	if names == nil {
		names = map[string]expected{}
		c.expects[dir] = names
	}
	if old, ok := names[name]; ok && old.known && e.known && old.id == e.id && old.gen > e.gen {
		// Headers of one file only go up: keep the newest seen (and
		// whether it was created here, as e says).
		old.created = old.created && e.created
		names[name] = old
		return
	}
	names[name] = *e
}

// requeue puts the names and expectations of a failed batch back among
// the noted ones; what was noted since wins. A name noted since is no
// longer trusted as created (its Touched found no expectation to drop
// the mark from).
func (c *notedChanges) requeue(touched map[dirID]map[string]bool, expects map[dirID]map[string]expected) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for d, names := range expects {
		for n, e := range names {
			if c.touched[d][n] && e.created {
				e.created = false
				names[n] = e
			}
		}
	}
	for d, names := range touched {
		for n := range names {
			if c.touched[d] == nil {
				c.touched[d] = map[string]bool{}
			}
			c.touched[d][n] = true
		}
	}
	for d, names := range expects {
		for n, e := range names {
			if _, newer := c.expects[d][n]; !newer {
				c.expectLocked(d, n, &e)
			}
		}
	}
}

// list lists the noted names not recorded yet.
func (c *notedChanges) list() []Unrecorded {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Unrecorded
	for d, names := range c.touched {
		for n := range names {
			u := Unrecorded{ID: fc.EncodeID(d[:]), Name: n}
			if e, ok := c.expects[d][n]; ok {
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
