package fresh

import (
	"sync"

	"golang.org/x/sys/unix"
)

// pathCache remembers where in CIPHERDIR the backing inodes that observed
// operations name lie, so that noting an operation costs an fstat of its
// fd rather than a readlink of /proc/self/fd/N (relPath). Why: that
// readlink took a fifth of the daemon's CPU in an rm -rf of a format-2
// vault, and a share of every untar (profiled 2026-11-23, rm -rf of Go's
// source tree).
//
// It is filled by relPath's answers and by creates (an fd with the name
// it was created at), forgets a path when its name is unlinked, moves a
// file's path when the file is renamed, and forgets everything at the
// rename of anything else (a directory's rename moves every path below
// it). That is exact only while every change to CIPHERDIR goes through
// the observer, so it is off when others write CIPHERDIR too
// (Options.SharedStorage). A nil *pathCache caches nothing.
type pathCache struct {
	mu     sync.Mutex
	byKey  map[inoKey]cachedPath
	byPath map[string]inoKey
	// gen counts the forgets and renames: a path learnt before one of
	// them (a readlink racing a rename in another goroutine) may be
	// stale, so putIf drops it.
	gen uint64
}

// inoKey is a backing inode.
type inoKey struct{ dev, ino uint64 }

// cachedPath is an inode's path relative to CIPHERDIR.
type cachedPath struct {
	path string
	dir  bool
}

// maxCachedPaths bounds the cache; a full cache starts again empty.
const maxCachedPaths = 1 << 16

func newPathCache() *pathCache {
	return &pathCache{byKey: map[inoKey]cachedPath{}, byPath: map[string]inoKey{}}
}

// stat returns fd's inode and whether it is a directory.
func stat(fd int) (inoKey, bool, bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return inoKey{}, false, false
	}
	return inoKey{uint64(st.Dev), st.Ino}, st.Mode&unix.S_IFMT == unix.S_IFDIR, true
}

// lookup returns the cached path of inode k, or the generation to give
// putIf with the path found elsewhere.
func (c *pathCache) lookup(k inoKey) (path string, gen uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.byKey[k]
	return p.path, c.gen, ok
}

// generation returns the count putIf checks.
func (c *pathCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// putIf records that inode k (a directory if dir) lies at path, a path
// learnt at generation gen: unless a forget or rename came since.
func (c *pathCache) putIf(gen uint64, k inoKey, path string, dir bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.byKey) >= maxCachedPaths {
		clear(c.byKey)
		clear(c.byPath)
	}
	if old, ok := c.byKey[k]; ok {
		delete(c.byPath, old.path)
	}
	c.dropLocked(path)
	c.byKey[k] = cachedPath{path, dir}
	c.byPath[path] = k
}

// forget drops what is cached at path (its name was unlinked).
func (c *pathCache) forget(path string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(path)
}

func (c *pathCache) forgetLocked(path string) {
	c.gen++
	c.dropLocked(path)
}

// dropLocked removes the entry at path, if any.
func (c *pathCache) dropLocked(path string) {
	if k, ok := c.byPath[path]; ok {
		delete(c.byPath, path)
		delete(c.byKey, k)
	}
}

// renamed records a rename of from to to (exchange: both swapped): a
// file's cached path moves; anything else clears the cache.
func (c *pathCache) renamed(from, to string, exchange bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	k, ok := c.byPath[from]
	if !ok || c.byKey[k].dir || exchange {
		clear(c.byKey)
		clear(c.byPath)
		return
	}
	delete(c.byPath, from)
	c.dropLocked(to) // replaced
	c.byKey[k] = cachedPath{path: to}
	c.byPath[to] = k
}
