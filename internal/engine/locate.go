package engine

import (
	"bytes"
	"errors"
	"sync"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// The directory locator (with Changes only): freshness is told changes by
// directory ID, and its batch must find each directory again. A directory
// ID never changes, so where a directory lies is one link, its parent's ID
// and its backing name there, learnt whenever the engine reads a
// directory's ID at a place (Root, Dir.Sub, ReadDirID) or makes one
// (Mkdir), moved by the engine's renames and dropped by its removals. A
// rename of a directory moves one link, not every path below it.
//
// Locate follows the links up to the root and opens the path down from
// it, and checks the ID found there: a link can be stale (another writer
// of CIPHERDIR, a link learnt through a conflict copy), and a stale one
// is dropped and reported, never trusted. The caller then finds the
// directory by walking the tree (fresh's batch).

// errNotLocated: Locate does not know where a directory lies, or found
// another one there.
var errNotLocated = fault.New(fault.NotFound, "engine: directory not located")

// maxDirLinks bounds the locator (about 200 bytes a link); a full one
// forgets a link at random for each new one.
const maxDirLinks = 1 << 17

// maxDepth bounds a chain of links (a cycle of stale links ends there).
const maxDepth = 4096

// dirLink is where a directory lies: its parent's ID and its backing name
// there (parent "" for the root).
type dirLink struct{ parent, name string }

// dirLinks is the locator's map. mu guards the rest.
type dirLinks struct {
	mu   sync.Mutex
	root string             // the root's ID
	up   map[string]dirLink // directory ID -> its link
	down map[dirLink]string // link -> directory ID
}

// learn records that directory id lies at name of parent.
func (l *dirLinks) learn(id, parent []byte, name string) {
	k, at := string(id), dirLink{string(parent), name}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.up[k]; ok {
		if old == at {
			return
		}
		delete(l.down, old)
	}
	if other, ok := l.down[at]; ok {
		delete(l.up, other)
	}
	if len(l.up) >= maxDirLinks {
		for x, xl := range l.up {
			delete(l.up, x)
			delete(l.down, xl)
			break
		}
	}
	l.up[k], l.down[at] = at, k
}

// learnRoot records the root's ID.
func (l *dirLinks) learnRoot(id []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.root = string(id)
}

// drop forgets the directory at name of parent (removed) and returns its
// ID ("" if none is known there).
func (l *dirLinks) drop(parent []byte, name string) string {
	at := dirLink{string(parent), name}
	l.mu.Lock()
	defer l.mu.Unlock()
	k, ok := l.down[at]
	if ok {
		delete(l.down, at)
		delete(l.up, k)
	}
	return k
}

// forget drops id's link (found stale).
func (l *dirLinks) forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.up[id]; ok {
		delete(l.up, id)
		delete(l.down, at)
	}
}

// renamed moves the directory at from (if one is known) to to; exchange
// swaps the two; otherwise a directory replaced at to is gone, and its ID
// is returned.
func (l *dirLinks) renamed(fromID []byte, from string, toID []byte, to string, exchange bool) (gone string) {
	a, b := dirLink{string(fromID), from}, dirLink{string(toID), to}
	l.mu.Lock()
	defer l.mu.Unlock()
	ka, okA := l.down[a]
	kb, okB := l.down[b]
	delete(l.down, a)
	delete(l.down, b)
	if okB {
		delete(l.up, kb)
	}
	if okA {
		l.up[ka], l.down[b] = b, ka
	}
	if okB && exchange {
		l.up[kb], l.down[a] = a, kb
	} else if okB && kb != ka {
		gone = kb
	}
	return gone
}

// of returns id's link (ok), or root set if id is the root's.
func (l *dirLinks) of(id []byte) (dirLink, bool, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.root != "" && string(id) == l.root {
		return dirLink{}, false, true
	}
	at, ok := l.up[string(id)]
	return at, ok, false
}

// path returns the backing names from the root down to id.
func (l *dirLinks) path(id []byte) ([]string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rev []string
	for cur := string(id); cur != l.root || l.root == ""; {
		at, ok := l.up[cur]
		if !ok || len(rev) >= maxDepth {
			return nil, false
		}
		rev = append(rev, at.name)
		cur = at.parent
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev, true
}

// Locate opens the directory with ID id where the locator says it lies,
// and returns its fd (the caller's to close) once the ID read there is
// id. errNotLocated if the locator does not know it (or is off: no
// Changes) or another directory is there (the stale link is dropped).
func (v *Vault) Locate(id []byte) (int, error) {
	c := v.changes
	if c == nil {
		return -1, errNotLocated
	}
	p, ok := c.links.path(id)
	if !ok {
		return -1, errNotLocated
	}
	// CIPHERDIR opened anew: the session's last batch runs after the
	// engine closed (the files' last headers told first).
	root, err := backing.OpenRoot(v.dir)
	fd := -1
	if err == nil {
		fd, err = backing.OpenPath(root, p)
		backing.Close(root)
	}
	if err != nil {
		c.links.forget(string(id))
		return -1, errors.Join(errNotLocated, err)
	}
	r := tree.ReadDirIDFile(fd)
	f, perr := tree.ParseDirIDFile(r.Raw)
	if r.Err != nil || perr != nil || !bytes.Equal(f.ID, id) {
		backing.Close(fd)
		c.links.forget(string(id))
		return -1, errNotLocated
	}
	return fd, nil
}

// Found tells the locator where a walk found directory id: at backing
// name of parent (nil parent: id is the root's).
func (v *Vault) Found(id, parent []byte, name string) {
	if c := v.changes; c != nil {
		if parent == nil {
			c.links.learnRoot(id)
		} else {
			c.links.learn(id, parent, name)
		}
	}
}

// learnAt records that directory id was read at place p (its parent's ID
// and encrypted name; the root's place for the root).
func (v *Vault) learnAt(id []byte, p Place) {
	c := v.changes
	if c == nil || id == nil {
		return
	}
	rp := v.tree.RootPlace()
	if p.EncName == "" {
		if bytes.Equal(p.ParentID, rp.ParentID) {
			c.links.learnRoot(id)
		}
		return
	}
	b, _ := names.Backing(p.EncName)
	c.links.learn(id, p.ParentID, b)
}
