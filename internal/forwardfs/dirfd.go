package forwardfs

import (
	"path"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/engine"
	"golang.org/x/sys/unix"
)

// backingDir is the backing-directory side of a directory node: it owns
// the rule that a directory is reached beneath CIPHERDIR by its node's
// fd (cached while the kernel holds the node, bounded by maxCachedDirFDs,
// never with SharedStorage, where each operation walks down from the
// root) and that its ID is read once, bound to its place with location
// binding. Its state is node's mu, dirID, fd, fdUsers and forgotten.
type backingDir struct{ n *node }

// openDir returns an fd of directory node n's backing directory and the
// directory ID; the caller calls release when done with the fd.
//
// Directory fds are cached in their nodes (measured: opening the backing
// directory with openat2 for every operation was 10-15% of the daemon's CPU
// in `rm -rf` of a source tree). A cached fd stays right across renames,
// since it names the directory inode, not a path; it is closed when the
// kernel forgets the node. The cache is bounded (maxCachedDirFDs) and off
// with SharedStorage.
func (bd backingDir) openDir() (fd int, id []byte, release func(), err error) {
	n := bd.n
	n.mu.Lock()
	if n.fd >= 0 {
		n.fdUsers++
		fd, id = n.fd, n.dirID
		n.mu.Unlock()
		return fd, id, bd.doneFD, nil
	}
	n.mu.Unlock()
	if n.r.opts.SharedStorage {
		// Nothing cached but the root: walk down, reading each ID once.
		if fd, id, err = bd.openWalk(); err != nil {
			return -1, nil, nil, err
		}
		n.mu.Lock()
		n.dirID = id
		n.mu.Unlock()
		return fd, id, func() { engine.CloseFD(fd) }, nil
	}
	if fd, err = bd.openUncached(); err != nil {
		return -1, nil, nil, err
	}
	if id = bd.cachedDirID(); id == nil {
		if id, err = bd.readDirID(fd); err != nil {
			engine.CloseFD(fd)
			return -1, nil, nil, err
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dirID = id
	if n.fd < 0 && !n.forgotten && n.r.reserveDirFD(n) {
		n.fd = fd
		n.fdUsers++
		return fd, id, bd.doneFD, nil
	}
	return fd, id, func() { engine.CloseFD(fd) }, nil
}

// cachedFD returns directory node n's cached backing fd, if it has one,
// without opening anything; the caller calls release when done with it.
func (bd backingDir) cachedFD() (fd int, release func(), ok bool) {
	n := bd.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd < 0 {
		return -1, nil, false
	}
	n.fdUsers++
	return n.fd, bd.doneFD, true
}

// openUncached opens directory node n's backing directory: relative to
// its parent's cached fd if there is one (one openat), else from the root
// with openat2 (one call), or, when the backing path would not fit in
// PATH_MAX (deep trees of short names: encrypted names are longer) or
// passes through an alias, through the parent, recursively.
func (bd backingDir) openUncached() (int, error) {
	n := bd.n
	_, parent := n.Parent()
	if parent == nil {
		return -1, syscall.ENOENT
	}
	pn := parent.Operations().(nodeOps).self()
	viaParent := func() (int, error) {
		e, err := n.entry()
		if err != nil {
			return -1, err
		}
		defer e.close()
		return engine.OpenSubdirFD(e.pfd, e.name.Backing)
	}
	pn.mu.Lock()
	parentCached := pn.fd >= 0
	pn.mu.Unlock()
	if parentCached {
		return viaParent()
	}
	rel, ok, err := bd.backingRel()
	if err != nil {
		return -1, err
	}
	if !ok || len(rel) >= unix.PathMax {
		return viaParent()
	}
	return engine.OpenDirFD(n.r.rootfd, rel)
}

// openWalk opens directory node n's backing directory with SharedStorage,
// where no directory fd is kept and a directory's ID is read again for
// each operation: a sync tool that merges two directories made apart may
// keep the other side's encryptfs.dirid (tree/altdir.go). It walks down
// from the root: each component is opened relative to the previous one
// and encrypted with the ID just read from it, so an operation at depth d
// costs d opens and d ID reads, and every directory on its path is read
// fresh. (Computing each ancestor's path on its own would cost 2^(d-1).)
// An ID that cannot be read falls back to the one read last time, if any.
func (bd backingDir) openWalk() (fd int, id []byte, err error) {
	n := bd.n
	var path []*node // n up to the root's child
	var plain []string
	for cur := n; cur != &n.r.node; {
		name, parent := cur.Parent()
		if parent == nil {
			return -1, nil, syscall.ENOENT // unlinked
		}
		path, plain = append(path, cur), append(plain, name)
		cur = parent.Operations().(nodeOps).self()
	}
	fd, id = n.r.rootfd, n.r.node.bdir.cachedDirID()
	here := n.r.ev.RootPlace() // the place of the directory fd (binding)
	for i := len(path) - 1; i >= 0; i-- {
		c := path[i]
		nm, err := n.r.ev.Name(id, plain[i])
		if err == nil && c.alias.Load() {
			p := here
			nm = n.r.aliasName(fd, id, func() (engine.Place, error) { return p, nil }, nm, plain[i])
		}
		next := -1
		if err == nil {
			next, err = engine.OpenSubdirFD(fd, nm.Backing)
		}
		if fd != n.r.rootfd {
			engine.CloseFD(fd)
		}
		if err != nil {
			return -1, nil, err
		}
		here = n.r.ev.Place(id, nm) // the directory's place (binding)
		fd = next
		if id, err = n.r.ev.ReadDirID(fd, here); err != nil {
			// A directory found where it is not bound is not served from
			// the ID read before (it was moved or grafted there since).
			if id = c.bdir.cachedDirID(); id == nil || engine.IsMisplaced(err) {
				engine.CloseFD(fd)
				return -1, nil, err
			}
		}
		if c != n {
			c.mu.Lock()
			c.dirID = id
			c.mu.Unlock()
		}
	}
	return fd, id, nil
}

// readDirID reads the ID of directory node n's backing directory fd. With
// location binding (format v2) the ID file must bind the directory to its
// place, its parent's ID and its encrypted name (engine.Vault.ReadDirID):
// the name is encrypted again for that. Without binding the place is not
// needed, and not computed.
func (bd backingDir) readDirID(fd int) ([]byte, error) {
	n := bd.n
	ev := n.r.ev
	switch {
	case !ev.Bound():
		return ev.ReadDirID(fd, engine.Place{})
	case n == &n.r.node:
		return ev.ReadDirID(fd, ev.RootPlace())
	}
	e, err := n.entry()
	if err != nil {
		return nil, err
	}
	defer e.close()
	return ev.ReadDirID(fd, ev.Place(e.pid, e.name))
}

// dirPlace is directory node n's place, computed when the tree needs it
// (a conflict copy of the directory's ID file, with location binding:
// tree.DirIDs.Alts); nil without binding.
func (bd backingDir) dirPlace() engine.DirPlace {
	n := bd.n
	ev := n.r.ev
	if !ev.Bound() {
		return nil
	}
	return func() (engine.Place, error) {
		if n == &n.r.node {
			return ev.RootPlace(), nil
		}
		e, err := n.entry()
		if err != nil {
			return engine.Place{}, err
		}
		defer e.close()
		return ev.Place(e.pid, e.name), nil
	}
}

// doneFD releases a use of the cached fd.
func (bd backingDir) doneFD() {
	n := bd.n
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fdUsers--
	bd.closeIfForgotten()
}

// closeIfForgotten closes the cached fd of a forgotten node once unused.
// n.mu is held.
func (bd backingDir) closeIfForgotten() {
	n := bd.n
	if n.forgotten && n.fdUsers == 0 && n.fd >= 0 && n != &n.r.node {
		engine.CloseFD(n.fd)
		n.fd = -1
		n.r.releaseDirFD(n)
	}
}

// OnForget closes the cached directory fd, and lets a renamed symlink's
// number go (forgetLink).
func (n *node) OnForget() {
	n.lnk.forgetLink()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.forgotten = true
	n.bdir.closeIfForgotten()
}

// cachedDirID returns the cached directory ID or nil.
func (bd backingDir) cachedDirID() []byte {
	n := bd.n
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dirID
}

// dirIDOf returns the directory's ID, reading it on first use.
func (bd backingDir) dirIDOf() ([]byte, error) {
	n := bd.n
	if id := bd.cachedDirID(); id != nil && (!n.r.opts.SharedStorage || n == &n.r.node) {
		return id, nil
	}
	_, id, release, err := bd.openDir()
	if err != nil {
		return nil, err
	}
	release()
	return id, nil
}

// backingRel computes the backing path of directory node n relative to
// CIPHERDIR by encrypting each component with its parent's ID. ok is false
// if a component is an alias (see alias), whose backing name is found only
// by searching its directory.
func (bd backingDir) backingRel() (rel string, ok bool, err error) {
	n := bd.n
	var parts []string
	cur := n
	for cur != &n.r.node {
		if cur.alias.Load() {
			return "", false, nil
		}
		name, parent := cur.Parent()
		if parent == nil {
			return "", false, syscall.ENOENT // unlinked
		}
		pn := parent.Operations().(nodeOps).self()
		pid, err := pn.bdir.dirIDOf()
		if err != nil {
			return "", false, err
		}
		nm, err := n.r.ev.Name(pid, name)
		if err != nil {
			return "", false, err
		}
		parts = append(parts, nm.Backing)
		cur = pn
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return path.Join(parts...), true, nil
}
