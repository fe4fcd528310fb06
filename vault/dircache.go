package vault

import (
	"strings"
	"sync"
	"time"

	"github.com/encryptfs/encryptfs/internal/engine"
)

// Directories resolved lately are kept a short while (gocryptfs's
// dirCache does the same): every call resolves its path from the root,
// and walking down costs, per component, a name's encryption and lookup,
// an open and the read (and, with location binding, the check) of the
// directory's ID file. A WebDAV PROPFIND opens each listed entry, so the
// same parent was resolved thousands of times a second (measured: 40% of
// an in-process PROPFIND of 1000 entries).
//
// What is kept is what engine.Dir.Sub found: the directory's fd, its ID
// read and checked at its place, and that place; each use is an
// engine.Dir over them (engine.Vault.DirAt), so the engine checks on use
// what it checks on any Dir (the binding of each entry opened in it).
// CIPHERDIR may be changed by others (a sync tool, a mount in another
// process), which no cache can see: an entry expires dirCacheTTL after it
// was resolved, so such a change is seen within that time. What this Vault
// changes itself is seen at once: Rename and Remove drop every entry at or
// beneath their paths (invalidate).
const (
	dirCacheTTL = time.Second
	dirCacheMax = 64 // directories kept at most (fds held)
)

// dirCache maps a plaintext directory path (its components joined by
// "/", "" for the root) to a resolved directory. It owns the rule that a
// kept fd is closed exactly once, when neither the cache nor a caller
// holds it (cachedDir.refs), so that an entry dropped while in use stays
// valid until its user is done, and none is used after Close.
type dirCache struct {
	ttl time.Duration
	max int
	now func() time.Time // time.Now; tests move the clock

	mu     sync.Mutex
	dirs   map[string]*cachedDir
	gen    uint64 // counts invalidations: a walk begun before one adds nothing
	uses   uint64 // a clock of uses, for evicting the least recently used
	timer  *time.Timer
	closed bool
}

// cachedDir is one resolved directory. fd is closed when refs (the cache's
// own reference while it keeps the entry, plus one per caller holding it)
// drops to 0.
type cachedDir struct {
	fd    int
	id    []byte
	place func() (engine.Place, error)
	born  time.Time
	used  uint64
	refs  int
}

func newDirCache() *dirCache {
	return &dirCache{ttl: dirCacheTTL, max: dirCacheMax, now: time.Now, dirs: map[string]*cachedDir{}}
}

// newEntry is a directory just resolved, held by its caller only.
func (c *dirCache) newEntry(fd int, id []byte, p engine.Place) *cachedDir {
	return &cachedDir{fd: fd, id: id, place: func() (engine.Place, error) { return p, nil }, born: c.now(), refs: 1}
}

// deepest returns the deepest live entry among comps' prefixes, held for
// the caller (release it), and how many components it covers; nil if none
// is kept. gen is to be handed to add for what the caller resolves from
// there.
func (c *dirCache) deepest(comps []string) (e *cachedDir, depth int, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gen = c.gen
	now := c.now()
	for i := len(comps); i >= 0; i-- {
		k := dirKey(comps[:i])
		e, ok := c.dirs[k]
		if !ok {
			continue
		}
		if now.Sub(e.born) >= c.ttl {
			c.drop(k, e)
			continue
		}
		c.uses++
		e.used = c.uses
		e.refs++
		return e, i, gen
	}
	return nil, 0, gen
}

// live is deepest, but an entry whose directory was removed since it was
// resolved (its link count is 0: removed behind this Vault's back,
// perhaps replaced by another directory at its name) is dropped, and the
// caller walks from the root. It costs one fstat: a rename elsewhere is
// only seen after the expiry, but a removal is seen at once where the
// backing store counts links.
func (c *dirCache) live(comps []string) (e *cachedDir, depth int, gen uint64) {
	e, depth, gen = c.deepest(comps)
	if e == nil {
		return e, depth, gen
	}
	if st, err := engine.StatFD(e.fd); err == nil && st.Nlink > 0 {
		return e, depth, gen
	}
	c.forget(dirKey(comps[:depth]), e)
	return nil, 0, gen
}

// forget drops e, held by the caller, from k if it is still there, and
// releases the caller's hold.
func (c *dirCache) forget(k string, e *cachedDir) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirs[k] == e {
		c.drop(k, e)
	}
	c.unref(e)
}

// add keeps e (held by its caller, who still releases it) at key k,
// unless the cache is off (ttl 0: Vault.SharedStorage), or was invalidated since the caller's walk began (gen: e
// may have been resolved before a rename through this Vault that moved
// it), is closed, or has an entry there already (a concurrent walk's).
// The least recently used entry makes room.
func (c *dirCache) add(k string, e *cachedDir, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.ttl <= 0 || gen != c.gen || c.dirs[k] != nil {
		return
	}
	if len(c.dirs) >= c.max {
		c.evictOne()
	}
	c.uses++
	e.used = c.uses
	e.refs++
	c.dirs[k] = e
	if c.timer == nil {
		c.timer = time.AfterFunc(2*c.ttl, c.sweep)
	}
}

// evictOne drops the least recently used entry. c.mu is held.
func (c *dirCache) evictOne() {
	var lk string
	var lru *cachedDir
	for k, e := range c.dirs {
		if lru == nil || e.used < lru.used {
			lk, lru = k, e
		}
	}
	if lru != nil {
		c.drop(lk, lru)
	}
}

// release gives back a caller's hold on e.
func (c *dirCache) release(e *cachedDir) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unref(e)
}

// drop removes entry e at k, closing its fd unless a caller holds it.
// c.mu is held.
func (c *dirCache) drop(k string, e *cachedDir) {
	delete(c.dirs, k)
	c.unref(e)
}

// unref drops one reference to e, closing its fd with the last. c.mu is
// held.
func (c *dirCache) unref(e *cachedDir) {
	e.refs--
	if e.refs == 0 {
		engine.CloseFD(e.fd)
		e.fd = -1
	}
}

// invalidate drops every entry at or beneath the plaintext path p (a
// rename or removal there may have moved or removed them) and stops walks
// in flight from adding what they resolved.
func (c *dirCache) invalidate(p string) {
	k := dirKey(split(p))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for ck, e := range c.dirs {
		if k == "" || ck == k || strings.HasPrefix(ck, k+"/") {
			c.drop(ck, e)
		}
	}
}

// sweep drops expired entries, so that an idle vault does not hold the
// fds of directories for longer than about twice the expiry.
func (c *dirCache) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timer = nil
	if c.closed {
		return
	}
	now := c.now()
	for k, e := range c.dirs {
		if now.Sub(e.born) >= c.ttl {
			c.drop(k, e)
		}
	}
	if len(c.dirs) > 0 {
		c.timer = time.AfterFunc(2*c.ttl, c.sweep)
	}
}

// close drops every entry (closing the fds no caller holds; the others
// close when released) and keeps nothing from now on.
func (c *dirCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	for k, e := range c.dirs {
		c.drop(k, e)
	}
}

// dirKey is the cache key of a directory's components.
func dirKey(comps []string) string { return strings.Join(comps, "/") }
