package fileengine

import (
	"errors"
	"sync"
)

// ErrBusy is returned by Table.Acquire when a caller that will write asks
// for an inode whose shared File sits on a read-only backing file: the
// writer would have to reopen the backing under the readers, so it is
// refused instead (the vault reports it as ETXTBSY).
var ErrBusy = errors.New("core: file is open on a read-only backing file and cannot be shared with a writer")

// FileKey identifies a backing inode: its device and inode number.
type FileKey struct{ Dev, Ino uint64 }

// OwnedBacking is a backing file that a Table takes over and closes after
// the File on it.
type OwnedBacking interface {
	Backing
	Close() error
}

// Table is an open-file table: at most one File per backing inode, shared
// by every opener with a reference count and closed with its last
// release. One File per inode is what the engine requires (a File caches
// the size and the last chunk, so two on one inode would disagree), and
// sharing it keeps an open-but-unlinked file working for every opener.
//
// V is the opener's state of an open inode (the mount's or the vault's),
// made once when the inode is first opened and handed to every later
// opener. Safe for concurrent use.
type Table[V comparable] struct {
	e *Engine
	// OnLast, if set, is called when the last reference to an inode is
	// released, with the table's lock held (so that it is ordered before
	// any later Acquire of the inode) and before its File closes. It must
	// not call the table. Set it before the table is used.
	OnLast func(key FileKey, val V)

	mu     sync.Mutex
	m      map[FileKey]*tableEntry[V]
	closed bool
	// opening counts, per inode, the Acquires that read a header without
	// the lock (see acquire); gone[key] counts the entries of key closed
	// while any of them did. Both are empty when no Acquire is opening.
	opening map[FileKey]int
	gone    map[FileKey]uint64
}

// tableEntry is one open inode.
type tableEntry[V comparable] struct {
	val      V
	file     *File
	b        OwnedBacking
	writable bool // b is open read-write
	refs     int
	owner    any // see Bind
}

// NewTable returns an empty table whose Files are opened by e.
func NewTable[V comparable](e *Engine) *Table[V] {
	return &Table[V]{e: e, m: make(map[FileKey]*tableEntry[V])}
}

// Acquire returns the state of inode key with a new reference. If the inode
// is already open, b is closed and the open File is shared; else e.Open
// opens a File over b, the table owns b from then on, and newVal makes the
// inode's state from the File. b is closed on every error.
//
// writable says whether b is open read-write. forWrite says whether the
// caller will write: it cannot share a File whose backing is read-only
// (ErrBusy). After Close, Acquire fails with ErrClosed.
//
// The File is opened without the table's lock held (it reads the header);
// if another Acquire of the same inode wins meanwhile, its File is shared
// and this one is closed again. If another opener's File of the inode
// came and went meanwhile (inserted, used, released), the header this one
// read may be older than what that File wrote (a rename rebinds it), so
// it is read again.
func (t *Table[V]) Acquire(key FileKey, b OwnedBacking, writable, forWrite bool, newVal func(*File) V) (V, error) {
	return t.acquire(key, b, nil, writable, forWrite, newVal)
}

// AcquireAt is Acquire for a file found at place p, for a vault with
// location binding (bound.go): the File is opened with OpenAt, and an
// inode already open under another place (a hard link) is shared only if
// its header binds it to p as well (bind.ErrMisplaced otherwise).
func (t *Table[V]) AcquireAt(key FileKey, b OwnedBacking, p Place, writable, forWrite bool, newVal func(*File) V) (V, error) {
	return t.acquire(key, b, &p, writable, forWrite, newVal)
}

// acquire is Acquire, and AcquireAt when p is set.
func (t *Table[V]) acquire(key FileKey, b OwnedBacking, p *Place, writable, forWrite bool, newVal func(*File) V) (V, error) {
	var zero V
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		b.Close()
		return zero, ErrClosed
	}
	if en := t.m[key]; en != nil {
		v, err := en.sharePlace(p, forWrite)
		t.mu.Unlock()
		b.Close()
		return v, err
	}
	t.startOpening(key)
	for {
		gen := t.gone[key]
		t.mu.Unlock()
		f, err := t.openFile(b, p)
		if err != nil {
			t.mu.Lock()
			t.doneOpening(key)
			t.mu.Unlock()
			b.Close()
			return zero, err
		}
		val := newVal(f)
		t.mu.Lock()
		if !t.closed && t.m[key] == nil && t.gone[key] != gen {
			t.mu.Unlock()
			f.Close() // stale: read the header again
			t.mu.Lock()
			continue
		}
		t.doneOpening(key)
		if t.closed {
			err = ErrClosed
		} else if other := t.m[key]; other == nil {
			t.m[key] = &tableEntry[V]{val: val, file: f, b: b, writable: writable, refs: 1}
			t.mu.Unlock()
			return val, nil
		} else {
			val, err = other.sharePlace(p, forWrite) // lost a race with another Acquire
		}
		t.mu.Unlock()
		f.Close()
		b.Close()
		return val, err
	}
}

// openFile opens a File over b, at place p if set.
func (t *Table[V]) openFile(b OwnedBacking, p *Place) (*File, error) {
	if p != nil {
		return t.e.OpenAt(b, *p)
	}
	return t.e.Open(b)
}

// startOpening records an Acquire of key that reads a header without the
// lock. Called with the lock held.
func (t *Table[V]) startOpening(key FileKey) {
	if t.opening == nil {
		t.opening, t.gone = make(map[FileKey]int), make(map[FileKey]uint64)
	}
	t.opening[key]++
}

// doneOpening ends what startOpening began. Called with the lock held.
func (t *Table[V]) doneOpening(key FileKey) {
	if t.opening[key]--; t.opening[key] == 0 {
		delete(t.opening, key)
		delete(t.gone, key)
	}
}

// sharePlace is share for an opener that found the inode at place p (if
// set), which the File must be bound to. Called with the lock held.
func (en *tableEntry[V]) sharePlace(p *Place, forWrite bool) (V, error) {
	if p != nil {
		if err := en.file.CheckPlace(*p); err != nil {
			var zero V
			return zero, err
		}
	}
	return en.share(forWrite)
}

// share takes a reference for another opener. Called with the lock held.
func (en *tableEntry[V]) share(forWrite bool) (V, error) {
	if forWrite && !en.writable {
		var zero V
		return zero, ErrBusy
	}
	en.refs++
	return en.val, nil
}

// Lookup returns the state of inode key with a new reference, if it is open.
func (t *Table[V]) Lookup(key FileKey) (V, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	en := t.m[key]
	if en == nil {
		var zero V
		return zero, false
	}
	en.refs++
	return en.val, true
}

// LookupOwned is Lookup for an inode bound to owner (see Bind): an open
// inode bound to anything else is not returned.
func (t *Table[V]) LookupOwned(key FileKey, owner any) (V, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	en := t.m[key]
	if en == nil || en.owner != owner {
		var zero V
		return zero, false
	}
	en.refs++
	return en.val, true
}

// Bind records owner as the one that open inode key (with state val)
// serves, for LookupOwned. The mount binds a file to the node it was opened
// through: an inode number can be reused by a new file while the kernel
// still holds a node for the old one, and that node must not be served the
// new file. A later Bind replaces the owner.
func (t *Table[V]) Bind(key FileKey, val V, owner any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if en := t.m[key]; en != nil && en.val == val {
		en.owner = owner
	}
}

// Hold takes another reference on an inode the caller already holds.
func (t *Table[V]) Hold(key FileKey, val V) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if en := t.m[key]; en != nil && en.val == val {
		en.refs++
	}
}

// Release drops a reference; the last one closes the File and then its
// backing, and returns their error. Releasing an inode that Close already
// closed does nothing.
func (t *Table[V]) Release(key FileKey, val V) error {
	t.mu.Lock()
	en := t.m[key]
	if en == nil || en.val != val {
		t.mu.Unlock()
		return nil
	}
	if en.refs == 1 {
		// The last reference: the writes the File owes its backing
		// (File.Settle) are made while it is still in the table, so
		// that a Setattr of times, which settles the File it finds
		// there first, never runs before them (its times would be
		// moved again). Without the table's lock: they are backing
		// I/O. An error is Close's to report, which tries again.
		t.mu.Unlock()
		en.file.Settle()
		t.mu.Lock()
		if en = t.m[key]; en == nil || en.val != val {
			t.mu.Unlock()
			return nil
		}
	}
	en.refs--
	if en.refs > 0 {
		t.mu.Unlock()
		return nil
	}
	delete(t.m, key)
	if t.opening[key] > 0 {
		t.gone[key]++
	}
	if t.OnLast != nil {
		t.OnLast(key, val)
	}
	t.mu.Unlock()
	return en.close()
}

// close closes the File, then the backing.
func (en *tableEntry[V]) close() error {
	return errors.Join(en.file.Close(), en.b.Close())
}

// Refs returns the number of references to inode key (0 if it is not
// open).
func (t *Table[V]) Refs(key FileKey) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if en := t.m[key]; en != nil {
		return en.refs
	}
	return 0
}

// Len returns the number of open inodes.
func (t *Table[V]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Close closes every open inode, whatever its references, and makes later
// Acquires fail with ErrClosed. For shutdown, when no opener will use its
// File again.
func (t *Table[V]) Close() error {
	t.mu.Lock()
	open := t.m
	t.m = make(map[FileKey]*tableEntry[V])
	t.closed = true
	t.mu.Unlock()
	var errs []error
	for _, en := range open {
		errs = append(errs, en.close())
	}
	return errors.Join(errs...)
}
