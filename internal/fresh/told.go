package fresh

import (
	"strings"
	"sync/atomic"

	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// Feeding the writer: the session's engine tells freshness, by (directory
// ID, backing name), what each of its operations changed, once the change
// is made (internal/engine, changes.go; Changes). Each change notes a
// name in v.noted with what this device made of it (expect.go); the
// batch finds the directories again by ID (batch.go) and reads the names
// back. Telling costs a map insert under a lock, never I/O.

// Told is what the engine tells (engine.Changes): the session hands it to
// the engine once (Vault.Changes).
type Told struct{ v *Vault }

// Changes returns what the session's engine tells its changes to.
func (v *Vault) Changes() Told { return Told{v} }

// dirKey is a directory ID as noted (a 16-byte ID; ok false otherwise).
func dirKey(id []byte) (k [fc.IDSize]byte, ok bool) {
	if len(id) != fc.IDSize {
		return k, false
	}
	return [fc.IDSize]byte(id), true
}

// Touched: name of dirID changed (xattrs, links, or a change not told
// apart): what it is now is the disk's to say, and a file created in
// this window is no longer known to have no xattrs (expect.go).
func (t Told) Touched(dirID []byte, name string) {
	if d, ok := dirKey(dirID); ok {
		t.v.noted.touch(d, name)
		t.v.noted.uncreate(d, name)
	}
}

// Wrote: the contents of the file at name of dirID changed (the header
// it wrote is told by Header).
func (t Told) Wrote(dirID []byte, name string) {
	if d, ok := dirKey(dirID); ok {
		t.v.noted.touch(d, name)
	}
}

// Created: name of dirID is a regular file this device created: empty,
// no xattrs, until this device tells otherwise (expect.go).
func (t Told) Created(dirID []byte, name string) {
	if d, ok := dirKey(dirID); ok {
		t.v.noted.expectAt(d, name, &expected{present: true, created: true})
	}
}

// MadeDir: name of dirID is a directory this device made, with ID id: no
// xattrs until this device tells otherwise (expect.go).
func (t Told) MadeDir(dirID []byte, name string, id []byte) {
	d, ok := dirKey(dirID)
	sub, ok2 := dirKey(id)
	if !ok || !ok2 {
		t.Made(dirID, name)
		return
	}
	t.v.noted.expectAt(d, name, &expected{present: true, created: true, dir: true, id: sub})
}

// Made: name of dirID was created: what it is now is the disk's to say.
func (t Told) Made(dirID []byte, name string) {
	if d, ok := dirKey(dirID); ok {
		t.v.noted.expectAt(d, name, nil)
	}
}

// Removed: this device removed name of dirID.
func (t Told) Removed(dirID []byte, name string) {
	if d, ok := dirKey(dirID); ok {
		t.v.noted.expectAt(d, name, &expected{})
	}
}

// Renamed: from of fromID is now to of toID (exchange: swapped).
func (t Told) Renamed(fromID []byte, from string, toID []byte, to string, exchange bool) {
	fd, ok1 := dirKey(fromID)
	td, ok2 := dirKey(toID)
	if !ok1 || !ok2 {
		t.All()
		return
	}
	t.v.noted.touch(fd, from)
	t.v.noted.touch(td, to)
	t.v.noted.expectRenamed(fd, from, td, to, exchange)
}

// Header: this device wrote the header (fileID, gen) of the file at name
// of dirID: its version of the file (expect.go).
func (t Told) Header(dirID []byte, name string, fileID []byte, gen uint64) {
	d, ok := dirKey(dirID)
	id, ok2 := dirKey(fileID)
	if !ok || !ok2 {
		return
	}
	t.v.noted.header(d, name, id, gen)
}

// Gone: the directory dirID was removed (or replaced by a rename): the
// names noted in it are not looked for (the batch would skip them, after
// a walk of the whole tree that does not find it).
func (t Told) Gone(dirID []byte) {
	if d, ok := dirKey(dirID); ok {
		t.v.noted.gone(d)
	}
}

// All: a change the engine cannot name (a repair by fd): the next batch
// records every directory.
func (t Told) All() {
	t.v.mu.Lock()
	t.v.fullPending = true
	t.v.mu.Unlock()
}

// Batches counts the batches that took the noted names (an open file
// tells its first content change after each).
func (t Told) Batches() *atomic.Uint64 { return &t.v.batches }

// recordedName is the name a manifest records for backing name name (a
// long name's sidecar stands for its entry), and whether it records one.
func recordedName(name string) (string, bool) {
	if long, ok := strings.CutSuffix(name, names.LongNameSuffix); ok && names.IsLongName(long) {
		name = long
	}
	return name, recorded(name)
}
