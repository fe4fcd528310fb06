package fresh

import (
	"slices"

	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
)

// What this device did to a name, as the engine told it (not as the
// disk says at the batch): a batch records a name from the disk, but the
// disk is the storage's, and whoever writes CIPHERDIR could put an older
// header back, or delete a file, or put a deleted one back, in the
// seconds between the device's change and the batch that records it. A
// batch that recorded that state as the device's own would hide it from
// every later check (format.md §15). So each change told leaves an
// expectation, and the batch records the device's change where the disk
// contradicts it:
//   - a header this device wrote (its file ID and gen, told by the file
//     engine as it wrote them) at a generation the disk no longer shows;
//   - a file this device wrote and did not remove or rename, missing;
//   - an object this device removed (unlinked, or renamed away), present
//     again.
// Xattrs are not covered: the record holds a digest of every value,
// which only the batch computes (docs/format.md §15), except for a file
// this device created in the batch's window (below).
//
// A file this device created (Told.Created) and changed since only by
// writes (Told.Wrote, Told.Header) is known whole: it is the file of the
// last header told (no header yet: empty, zero ID), and it has no xattrs
// (an xattr set would have been told as Touched, which drops the mark).
// The batch records that without reading the file back (observe costs
// six system calls and a MAC per file, most of what freshness costs an
// untar), and a disk that says otherwise is the storage's change, which
// the next check reports (as above). A record's gen may lag (holds), so
// a header not told yet is no false alarm.
//
// A directory this device made (Told.MadeDir) is known the same way: its
// ID is the one the engine wrote in it, and a new backing directory has
// no user.* xattrs until the device sets one, which it tells as Touched
// (a directory's xattrs are its entry's, engine/changes.go self). Its
// observe costs nine system calls (stat, open, the ID file's four, the
// xattr list, close).

// expected is what this device last made of one name.
type expected struct {
	present bool
	id      [fc.IDSize]byte // a file's ID and gen, from the header it wrote
	gen     uint64
	known   bool // present with a header this device wrote (id, gen)
	// created: a regular file this device created in this window, whose
	// every change since was told as a content change: no xattrs; or
	// with dir, a directory it made (ID id), not told changed since.
	created bool
	dir     bool
}

// made is what the batch records of a name this device created (e.created):
// the file of its last header told, or the directory it made, with no
// xattrs; no disk read.
func (e expected) made() actual {
	if e.dir {
		return actual{present: true, kind: fc.KindDir, id: e.id}
	}
	return actual{present: true, kind: fc.KindFile, id: e.id, gen: e.gen}
}

// apply returns what the batch records for a name found as a, given what
// this device made of it (e) and the name's records (refs).
func (e expected) apply(a actual, refs []ref) actual {
	switch {
	case !e.present:
		// Removed by this device: the object it removed is back.
		if a.present && slices.ContainsFunc(refs, func(r ref) bool {
			return r.rec.Kind != fc.KindDeleted && r.rec.ObjectID == a.id
		}) {
			return actual{}
		}
	case !e.known:
	case !a.present:
		// Written by this device, and gone without its doing.
		out := actual{present: true, kind: fc.KindFile, id: e.id, gen: e.gen}
		for _, r := range refs {
			if r.rec.ObjectID == e.id {
				out.xattrs = r.rec.Xattrs
			}
		}
		return out
	case a.kind == fc.KindFile && a.id == e.id && a.gen < e.gen:
		// An older header of the file this device wrote.
		a.gen = e.gen
	}
	return a
}
