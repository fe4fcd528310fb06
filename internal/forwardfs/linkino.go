package forwardfs

import (
	"sync"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// Symlink inode numbers.
//
// A symlink shows its backing inode number, as every other entry does: the
// number is the same on every mount, matches readdir's d_ino, and hard
// links (none for symlinks, see Link) would share it. A rename re-creates
// the backing link, whose target is bound to its name, so the backing
// number changes. The node the kernel holds keeps the number it was given
// (go-fuse's StableAttr cannot change) and records the new backing number
// (linkIno), so that a lookup of the new name finds the same node: within
// one mount a renamed symlink keeps its number. The next mount shows the
// new backing number (docs/format.md §8).
//
// The old backing number is free in the backing store and may be given to
// a new symlink while the renamed node lives. That symlink must not be
// merged with the renamed node (go-fuse identifies nodes by mode, number
// and generation): it gets a generation of its own (movedLinks).

// movedLinks holds the numbers that renamed symlink nodes still show and
// that their backing links no longer have.
type movedLinks struct {
	mu   sync.Mutex
	held map[uint64]int // number -> renamed nodes showing it
	gen  uint64         // last generation given to a colliding new symlink
}

// hold records a renamed node showing ino.
func (m *movedLinks) hold(ino uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held == nil {
		m.held = make(map[uint64]int)
	}
	m.held[ino]++
}

// release undoes hold when the renamed node is forgotten.
func (m *movedLinks) release(ino uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[ino]--; m.held[ino] <= 0 {
		delete(m.held, ino)
	}
}

// generation returns 0 for a symlink with backing number ino, or a fresh
// generation if a renamed node shows ino.
func (m *movedLinks) generation(ino uint64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[ino] == 0 {
		return 0
	}
	m.gen++
	return m.gen
}

// symlinkIno is the symlink side of a node: it owns the rule above (a
// renamed symlink keeps its number within a mount, and a new symlink that
// gets a held number gets a generation of its own). Its state is node's
// linkIno and linkHeld, and Root.moved.
type symlinkIno struct{ n *node }

// knownLink returns the node the kernel knows as symlink name in
// directory n if that node has backing link number ino (it may show an
// older number, from before a rename), else nil.
func (sl symlinkIno) knownLink(name string, ino uint64) *fs.Inode {
	n := sl.n
	if c := n.GetChild(name); c != nil && c.StableAttr().Mode == unix.S_IFLNK {
		if c.Operations().(nodeOps).self().linkIno.Load() == ino {
			return c
		}
	}
	return nil
}

// linkIdentity is the go-fuse identity of symlink name in directory n
// whose backing number is ino: that of the node the kernel knows
// (knownLink), else the backing number.
func (sl symlinkIno) linkIdentity(name string, ino uint64) fs.StableAttr {
	n := sl.n
	if c := sl.knownLink(name, ino); c != nil {
		return c.StableAttr()
	}
	return fs.StableAttr{Mode: unix.S_IFLNK, Ino: ino, Gen: n.r.moved.generation(ino)}
}

// linkNumber is the number symlink name in directory n with backing
// number ino shows, for readdir's d_ino.
func (sl symlinkIno) linkNumber(name string, ino uint64) uint64 {
	if c := sl.knownLink(name, ino); c != nil {
		return c.StableAttr().Ino
	}
	return ino
}

// linkMoved records that symlink node n's backing link is now ino (after a
// rename re-created it).
func (sl symlinkIno) linkMoved(ino uint64) {
	n := sl.n
	n.linkIno.Store(ino)
	if ino != n.StableAttr().Ino && n.linkHeld.CompareAndSwap(false, true) {
		n.r.moved.hold(n.StableAttr().Ino)
	}
}

// forgetLink releases what linkMoved held, when the kernel forgets n.
func (sl symlinkIno) forgetLink() {
	n := sl.n
	if n.linkHeld.CompareAndSwap(true, false) {
		n.r.moved.release(n.StableAttr().Ino)
	}
}
