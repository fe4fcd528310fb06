package fresh

import (
	"slices"

	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
)

// A directory's state is the union of its devices' manifests. Each name
// has at most one record per device; a record replaces (dominates) another
// device's record if its Over names that device at a stamp at least the
// other's. The records no other record dominates are the current ones;
// more than one is a conflict (two devices changed the name without
// seeing each other's change), and the name may be in either state.

// ref is one device's record.
type ref struct {
	dev [fc.IDSize]byte
	rec *fc.Record
}

// dirRecords are the manifests of one directory, by device.
type dirRecords map[[fc.IDSize]byte]*fc.Manifest

// byName returns every device's record of each name.
func (d dirRecords) byName() map[string][]ref {
	out := map[string][]ref{}
	for dev, m := range d {
		for i := range m.Records {
			r := &m.Records[i]
			out[r.Name] = append(out[r.Name], ref{dev: dev, rec: r})
		}
	}
	return out
}

// dominates reports whether a replaces b.
func dominates(a, b ref) bool {
	if a.dev == b.dev {
		return false
	}
	for _, o := range a.rec.Over {
		if o.Device == b.dev && o.Counter >= b.rec.Stamp {
			return true
		}
	}
	return false
}

// current returns the records of refs that no other record dominates, and
// the others (superseded).
func current(refs []ref) (cur, old []ref) {
	for i, r := range refs {
		beaten := false
		for j, o := range refs {
			if i != j && dominates(o, r) {
				beaten = true
				break
			}
		}
		if beaten {
			old = append(old, r)
		} else {
			cur = append(cur, r)
		}
	}
	return cur, old
}

// exact reports whether a is exactly what r records (a writer records a
// name anew unless some current record is exact).
func exact(a actual, r *fc.Record) bool {
	if r.Kind == fc.KindDeleted {
		return !a.present
	}
	return a.present && a.kind == r.Kind && a.id == r.ObjectID && a.gen == r.Gen && a.xattrs == r.Xattrs
}

// holds reports whether a satisfies r: the same object with the same
// xattrs, at r's gen or newer (a file may be newer than its record:
// records are written in batches, and a header cannot be forged forward).
// A record of an empty file (no header yet, zero ID) holds for the file
// once written: its first write gives it a header and an ID, which a
// batch may record after the write (records lag behind, as gens do).
// The ID is fixed from then on (truncate keeps the
// header), so only this one transition needs the exception; putting
// another file's contents there fails location binding.
func holds(a actual, r *fc.Record) bool {
	if r.Kind == fc.KindDeleted {
		return !a.present
	}
	sameObject := a.id == r.ObjectID || r.Kind == fc.KindFile && r.ObjectID == [fc.IDSize]byte{}
	return a.present && a.kind == r.Kind && sameObject && a.gen >= r.Gen && a.xattrs == r.Xattrs
}

// older reports whether a is an older state of the object r records: the
// same object at a lower gen, or with the xattrs of a superseded record
// (other than none: removing every xattr is a legitimate way back to
// none). Used to tell a rollback from a change not yet recorded.
func older(a actual, r *fc.Record, old []ref) bool {
	if !a.present || r.Kind == fc.KindDeleted || a.kind != r.Kind || a.id != r.ObjectID {
		return false
	}
	if a.gen < r.Gen {
		return true
	}
	if a.xattrs == r.Xattrs || a.xattrs == ([fc.IDSize]byte{}) {
		return false
	}
	for _, o := range old {
		if o.rec.ObjectID == a.id && o.rec.Xattrs == a.xattrs {
			return true
		}
	}
	return false
}

// record is the record of a as device dev writes it at counter, replacing
// the other devices' records of the name in refs.
func record(name string, a actual, counter uint64, self [fc.IDSize]byte, refs []ref) fc.Record {
	r := fc.Record{Name: name, Kind: fc.KindDeleted, Stamp: counter}
	if a.present {
		r.Kind, r.ObjectID, r.Gen, r.Xattrs = a.kind, a.id, a.gen, a.xattrs
	}
	for _, o := range refs {
		if o.dev != self {
			r.Over = append(r.Over, fc.Stamp{Device: o.dev, Counter: o.rec.Stamp})
		}
	}
	return r
}

// noteReplacedXattrs keeps, in the local state, the xattr digest of this
// device's record old of an object that its new record rec replaces with
// another digest of the same object (saved with the batch's state).
// Why a digest seen before proves a rollback: xattr values are sealed
// under random nonces (format.md §9), so setting a value, even the same
// one again, never gives a digest back; only a copy of the older backing
// xattrs does. A file's gen orders its states the same way; a digest has
// no order, and the manifests keep only each device's newest record.
func (v *Vault) noteReplacedXattrs(old, rec fc.Record) {
	if old.Kind == fc.KindDeleted || old.Kind != rec.Kind || old.ObjectID != rec.ObjectID ||
		old.Xattrs == rec.Xattrs || old.Xattrs == ([fc.IDSize]byte{}) {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.state.Replaced == nil {
		v.state.Replaced = map[string][]string{}
	}
	k, d := fc.EncodeID(old.ObjectID[:]), fc.EncodeID(old.Xattrs[:])
	list := slices.DeleteFunc(v.state.Replaced[k], func(s string) bool { return s == d })
	list = append(list, d)
	v.state.Replaced[k] = list[max(0, len(list)-maxReplaced):]
}

// replacedXattrs reports whether a is the object r records with xattrs
// this device recorded for it before and replaced (noteReplacedXattrs):
// an older state, put back. The caller holds v.mu.
func (v *Vault) replacedXattrs(a actual, r *fc.Record) bool {
	if !a.present || r.Kind == fc.KindDeleted || a.kind != r.Kind || a.id != r.ObjectID ||
		a.xattrs == r.Xattrs || a.xattrs == ([fc.IDSize]byte{}) {
		return false
	}
	return slices.Contains(v.state.Replaced[fc.EncodeID(a.id[:])], fc.EncodeID(a.xattrs[:]))
}
