package fresh

import (
	"bytes"
	"errors"
	"slices"

	"github.com/encryptfs/encryptfs/internal/backing"
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// loadOwn loads this device's epoch entries: from its epoch file if that
// is authentic and not below what this client saw, else from its
// manifests as they are.
func (v *Vault) loadOwn() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.own = map[[fc.IDSize]byte]fc.EpochEntry{}
	if b, err := readSmall(v.root, epochName(v.self)); err == nil {
		if e, err := v.keyed.ParseEpoch(b); err == nil && e.Device == v.self && e.Counter >= v.state.seen(v.Device()).Epoch {
			for _, m := range e.Manifests {
				v.own[m.DirID] = m
			}
			return
		}
	}
	v.ownFromManifests()
}

// ownFromManifests sets v.own to this device's manifests as they are.
func (v *Vault) ownFromManifests() {
	v.own = map[[fc.IDSize]byte]fc.EpochEntry{}
	for id, b := range v.ownManifestFiles() {
		if mf := v.manifestOf(v.self, id, b); mf.err == nil {
			v.own[mf.m.DirID] = fc.EpochEntry{DirID: mf.m.DirID, Counter: mf.m.Counter, Hash: mf.hash}
		}
	}
}

// batch records the noted changes (all: every directory of the vault) in
// this device's manifests and epoch. The counter is saved before anything
// is written with it.
func (v *Vault) batch(all bool) error {
	v.batchMu.Lock()
	defer v.batchMu.Unlock()
	notes := v.noted.take()
	v.batches.Add(1) // an open file tells its next content change again
	v.mu.Lock()
	all = all || v.fullPending
	v.fullPending = false // Told.All during this batch sets it again
	v.mu.Unlock()
	if !all && len(notes) == 0 {
		return nil
	}
	err := v.record(all, notes)
	if err != nil {
		// Nothing noted is lost to a failed batch (a full disk, a
		// manifests directory the storage replaced): the next batch
		// takes the names again, and Close keeps them in the local
		// state for the next mount (unrecorded.go).
		v.noted.requeue(notes)
		if all {
			v.mu.Lock()
			v.fullPending = true
			v.mu.Unlock()
		}
	}
	return err
}

// record is batch's work on the names it took.
func (v *Vault) record(all bool, notes notesOf) error {
	v.mu.Lock()
	if v.own == nil {
		v.mu.Unlock()
		v.loadOwn()
		v.mu.Lock()
	}
	v.state.Counter++
	counter := v.state.Counter
	err := v.state.save(v.stateDir)
	v.mu.Unlock()
	if err != nil {
		return err
	}
	devs, err := v.allDevices()
	if err != nil {
		return err
	}
	written := map[[fc.IDSize]byte]fc.EpochEntry{}
	record := func(dirfd int, dirID [fc.IDSize]byte, names []string, noted map[string]note) error {
		m, changed := v.recordDir(dirfd, dirID, names, counter, devs, noted)
		if !changed {
			return nil
		}
		h, err := v.writeManifest(m)
		if err == nil {
			written[dirID] = fc.EpochEntry{DirID: dirID, Counter: counter, Hash: h}
		}
		return err
	}
	v.staged = nil // what a failed batch staged is taken again whole
	if all {
		err = v.walk(func(d walkDir) error { return record(d.fd, d.id, nil, nil) })
	} else {
		err = v.recordTouched(notes, record)
	}
	if err == nil {
		err = v.flushBuckets()
	}
	if err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if all {
		v.ownFromManifests() // accept what is there, rewritten or not
	}
	for id, e := range written {
		v.own[id] = e
	}
	ep := &fc.Epoch{Device: v.self, Counter: counter}
	for _, e := range v.own {
		ep.Manifests = append(ep.Manifests, e)
	}
	if err := v.writeEpoch(ep); err != nil {
		return err
	}
	// What this client saw of its own manifests only rises: a manifest
	// rolled back under a mount stays reported after the mount's next
	// batch commits to it (only Accept lowers it).
	s := v.state.seen(v.Device())
	s.Epoch, s.Confirmed = counter, counter
	for id, e := range v.own {
		k := fc.EncodeID(id[:])
		s.Manifests[k] = max(s.Manifests[k], e.Counter)
	}
	return v.state.save(v.stateDir)
}

// recordTouched records the noted names, directory by directory, each
// directory found by its ID: where the engine last saw it (Reader.Locate),
// checked by the ID read there, else by one walk of the tree for all
// those it did not find. A directory the walk does not find either is
// gone (removed, or removed with an ancestor): skipped, as its parent's
// record says it is gone. So is one the engine told gone since the names
// were taken, without the walk.
func (v *Vault) recordTouched(notes notesOf, record func(int, [fc.IDSize]byte, []string, map[string]note) error) error {
	ids := make([]dirID, 0, len(notes))
	for d := range notes {
		ids = append(ids, d)
	}
	slices.SortFunc(ids, func(a, b dirID) int { return bytes.Compare(a[:], b[:]) })
	namesOf := func(d dirID) []string {
		var out []string
		for n := range notes[d] {
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	lost := map[dirID]bool{}
	for _, d := range ids {
		fd, ok := v.locate(d)
		if !ok {
			if !v.noted.wentAway(d) {
				lost[d] = true
			}
			continue
		}
		err := record(fd, d, namesOf(d), notes[d])
		backing.Close(fd)
		if err != nil {
			return err
		}
	}
	if len(lost) == 0 {
		return nil
	}
	return v.walk(func(w walkDir) error {
		if !lost[w.id] {
			return nil
		}
		delete(lost, w.id) // a second directory of one ID (a copy) is not it
		return record(w.fd, w.id, namesOf(w.id), notes[w.id])
	})
}

// locate opens directory d where the engine last saw it. Reader.Locate
// has read d there already (reading it again cost five syscalls per
// directory and batch).
func (v *Vault) locate(d dirID) (int, bool) {
	if v.r.Locate == nil {
		return -1, false
	}
	fd, err := v.r.Locate(d[:])
	if err != nil {
		return -1, false
	}
	return fd, true
}

// allDevices are the devices with manifests, and this one.
func (v *Vault) allDevices() ([][fc.IDSize]byte, error) {
	devs, err := v.devices()
	if err != nil {
		return nil, err
	}
	if !slices.Contains(devs, v.self) {
		devs = append(devs, v.self)
	}
	return devs, nil
}

// recordDir updates this device's manifest of directory dirID for names
// (nil: every name on disk or in a manifest): a name whose current
// records do not say exactly what it is gets a new record of this
// device. changed reports whether the manifest needs writing.
func (v *Vault) recordDir(dirfd int, dirID [fc.IDSize]byte, names []string, counter uint64, devs [][fc.IDSize]byte, noted map[string]note) (*fc.Manifest, bool) {
	recs := v.dirRecords(devs, dirID)
	own := recs[v.self]
	if own == nil {
		own = &fc.Manifest{Device: v.self, DirID: dirID}
	}
	byName := recs.byName()
	if names == nil {
		names = allNames(dirfd, byName)
	}
	changed := false
	var at map[string]int // own.Records by name, made at the first record
	for _, n := range names {
		refs := byName[n]
		a, err := v.nameNow(dirfd, n, noted[n], refs)
		if err != nil {
			continue
		}
		cur, _ := current(refs)
		if !a.present && len(refs) == 0 || slices.ContainsFunc(cur, func(r ref) bool { return exact(a, r.rec) }) {
			continue
		}
		rec := record(n, a, counter, v.self, refs)
		if at == nil {
			// A map, not a search of the records per name: a batch after
			// an untar records every name of a directory, and a search
			// each was quadratic in the directory's size (slices.IndexFunc
			// took a third of the batch's CPU for the kernel subset).
			at = make(map[string]int, len(own.Records))
			for i, r := range own.Records {
				if _, dup := at[r.Name]; !dup { // the first, as a search found
					at[r.Name] = i
				}
			}
		}
		if i, ok := at[n]; ok {
			v.noteReplacedXattrs(own.Records[i], rec)
			own.Records[i] = rec
		} else {
			at[n] = len(own.Records)
			own.Records = append(own.Records, rec)
		}
		changed = true
	}
	if changed {
		own.Counter = counter
	}
	return own, changed
}

// nameNow is what the batch records name n of dirfd as: a file this
// device created in the window as the engine told it, with no disk read;
// else what the disk says, corrected by what the device did (expect.go).
func (v *Vault) nameNow(dirfd int, n string, noted note, refs []ref) (actual, error) {
	e, ok := noted.e, noted.has
	if ok && e.created {
		v.trusted.Add(1)
		return e.made(), nil
	}
	a, err := v.r.observe(dirfd, n)
	if err == nil && ok {
		a = e.apply(a, refs)
	}
	return a, err
}

// allNames is every recorded name on disk in dirfd and every name the
// manifests of the directory record, sorted.
func allNames(dirfd int, byName map[string][]ref) []string {
	on, _ := listRecorded(dirfd)
	for n := range byName {
		on = append(on, n)
	}
	slices.Sort(on)
	return slices.Compact(on)
}

// walkDir is one directory of the plaintext tree.
type walkDir struct {
	fd   int
	id   [fc.IDSize]byte
	path string // plaintext, "/" for the root
	// parent and name: where it lies (hasParent false for the root).
	parent    dirID
	name      string
	hasParent bool
}

// walk calls fn for every directory of the vault, root first
// (tree.Walk): into every recorded name that is a directory.
func (v *Vault) walk(fn func(walkDir) error) error {
	v.walks.Add(1)
	root, err := v.openRoot()
	if err != nil {
		return err
	}
	defer backing.Close(root)
	return tree.Walk(root, walkData{path: "/"}, tree.Walker{
		Enter: func(d *tree.WalkDir) (bool, error) {
			w := walkDirOf(d)
			v.found(w)
			if err := fn(w); err != nil {
				return false, err
			}
			return true, d.ListErr
		},
		Entry: func(d *tree.WalkDir, n string, st unix.Stat_t, err error) (bool, any, error) {
			if err != nil || !recorded(n) || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return false, nil, nil
			}
			w := walkDirOf(d)
			return true, walkData{path: v.plainPath(w, n), parent: w.id, name: n, hasParent: true}, nil
		},
		OpenFailed: func(_ *tree.WalkDir, _ string, _ any, err error) error {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return err
		},
	})
}

// walkData is what the walk keeps of a directory: its plaintext path, and
// its parent's ID and its backing name there (none for the root).
type walkData struct {
	path      string
	parent    dirID
	name      string
	hasParent bool
}

// walkDirOf is the walk's directory d as fn sees it.
func walkDirOf(d *tree.WalkDir) walkDir {
	w := d.Data.(walkData)
	return walkDir{fd: d.Fd, id: dirIDOf(d.ID), path: w.path, parent: w.parent, name: w.name, hasParent: w.hasParent}
}

// found tells the engine where the walk found w (Reader.Found), so that
// the next batch locates it without a walk.
func (v *Vault) found(w walkDir) {
	if v.r.Found == nil {
		return
	}
	if !w.hasParent {
		v.r.Found(w.id[:], nil, "")
		return
	}
	v.r.Found(w.id[:], w.parent[:], w.name)
}

// plainPath is the plaintext path of backing name n in d (the backing
// name in brackets where it does not decrypt).
func (v *Vault) plainPath(d walkDir, n string) string {
	p := "[" + n + "]"
	if v.r.Name != nil {
		if s, err := v.r.Name(d.fd, d.id[:], n); err == nil {
			p = s
		}
	}
	if d.path == "/" {
		return "/" + p
	}
	return d.path + "/" + p
}

// openRoot opens CIPHERDIR again (a descriptor of the caller's own, to
// list and walk from).
func (v *Vault) openRoot() (int, error) { return backing.OpenDir(v.root, "") }
