package fresh

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
)

// Status is the verdict of a check, in increasing gravity.
type Status int

// The verdicts.
const (
	// OK: everything is as recorded, nothing went back.
	OK Status = iota
	// Behind: some recorded state is not (yet) there, in a way a sync in
	// flight or another device's unrecorded change can explain.
	Behind
	// RolledBack: something went back (or was deleted) in a way no sync
	// can explain: an authentic counter below one this client saw, a
	// manifest below what its device's epoch commits to, an entry older
	// than its confirmed record, or, where no other device could have
	// changed it, any difference from the records.
	RolledBack
)

func (s Status) String() string {
	return [...]string{"OK", "behind", "rolled back"}[s]
}

// Issue is one difference found.
type Issue struct {
	Status Status
	// Device is the device concerned (EncodeID form), "" for none.
	Device string
	// Path is the plaintext path concerned ("/" the root); "" for an
	// epoch file.
	Path string
	// What happened, in words.
	What string
	// From and To are counters (the device's) where they tell what went
	// back: the one seen or committed, and the one found (0: none).
	From, To uint64
	// Recorded is the stamp (the device's counter) of the record an
	// entry differs from; 0 for the other issues.
	Recorded uint64
	// Since is when this client first saw the issue (Behind issues that
	// turn into RolledBack when they outlast Options.Grace).
	Since time.Time
	// OlderVersion: the entry is the recorded file at a lower generation
	// (an older header put back: fsck tells it from a crash's DIRTY file).
	OlderVersion bool
	// key identifies a Behind issue across checks ("" never escalates).
	key string
}

func (i Issue) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", i.Status)
	if i.Path != "" {
		fmt.Fprintf(&b, "%s: ", i.Path)
	}
	b.WriteString(i.What)
	if !i.Since.IsZero() {
		fmt.Fprintf(&b, ", since %s", i.Since.UTC().Format(time.RFC3339))
	}
	if i.Device != "" {
		fmt.Fprintf(&b, " (device %s", i.Device)
		if i.Recorded != 0 {
			fmt.Fprintf(&b, ", recorded at %d", i.Recorded)
		} else if i.From != 0 || i.To != 0 {
			fmt.Fprintf(&b, ", from %d to %d", i.From, i.To)
		}
		b.WriteString(")")
	}
	return b.String()
}

// Report is the result of Check.
type Report struct {
	Status Status
	Issues []Issue
	// Devices are the devices the vault has, with their current epoch
	// counters (0: no epoch file).
	Devices map[string]uint64
	// Self is this client's device.
	Self string
}

// String is the report as the mount log and the CLI show it.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "freshness: %s", r.Status)
	for _, i := range r.Issues {
		b.WriteString("\n  " + i.String())
	}
	return b.String()
}

func (r *Report) add(i Issue) {
	r.Issues = append(r.Issues, i)
	r.Status = max(r.Status, i.Status)
}

// Check compares the vault with its manifests and with what this client
// saw before, and raises what it saw (Seen; Confirmed only when the vault
// is OK). A mount flushes its own changes first.
func (v *Vault) Check() (*Report, error) {
	v.mu.Lock()
	started := v.started
	v.mu.Unlock()
	if started {
		if err := v.Flush(); err != nil {
			return nil, err
		}
	}
	return v.check(v.lock != nil)
}

// check is Check without the flush; save: write the raised Seen.
func (v *Vault) check(save bool) (*Report, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	st := v.state
	rep := &Report{Self: v.Device(), Devices: map[string]uint64{}}
	devs, err := v.allDevices()
	if err != nil {
		return nil, err
	}
	epochs, err := v.readEpochs()
	if err != nil {
		return nil, err
	}
	known := map[[fc.IDSize]byte]bool{v.self: true}
	for _, d := range devs {
		known[d] = true
	}
	for d := range epochs {
		known[d] = true
	}
	for k := range st.Seen {
		if id, ok := fc.DecodeID(k); ok {
			known[[fc.IDSize]byte(id)] = true
		}
	}
	// The tree first: the plaintext path of each directory ID.
	paths := map[[fc.IDSize]byte]string{}
	raised := map[string]*Seen{}
	err = v.walk(func(d walkDir) error {
		paths[d.id] = d.path
		v.checkDir(d, devs, rep)
		return nil
	})
	if err != nil {
		return nil, err
	}
	ids := make([][fc.IDSize]byte, 0, len(known))
	for d := range known {
		ids = append(ids, d)
	}
	slices.SortFunc(ids, func(a, b [fc.IDSize]byte) int { return strings.Compare(string(a[:]), string(b[:])) })
	for _, d := range ids {
		raised[fc.EncodeID(d[:])] = v.checkDevice(d, epochs, paths, rep)
	}
	pending := v.escalate(rep)
	if save {
		st.Pending = pending
		for dev, now := range raised {
			if now == nil {
				continue
			}
			s := st.seen(dev)
			s.Epoch = max(s.Epoch, now.Epoch)
			for id, c := range now.Manifests {
				s.Manifests[id] = max(s.Manifests[id], c)
			}
			if rep.Status == OK {
				s.Confirmed = max(s.Confirmed, now.Epoch)
			}
		}
		if err := st.save(v.stateDir); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// checkDevice checks device d's epoch and the manifests it commits to
// against what this client saw; it returns what it found authentic.
func (v *Vault) checkDevice(d [fc.IDSize]byte, epochs map[[fc.IDSize]byte]epochFile, paths map[[fc.IDSize]byte]string, rep *Report) *Seen {
	dev := fc.EncodeID(d[:])
	seen := v.state.Seen[dev]
	if seen == nil {
		seen = &Seen{}
	}
	ef, ok := epochs[d]
	switch {
	case !ok && seen.Epoch > 0 && d == v.self:
		rep.add(Issue{Status: RolledBack, Device: dev, What: "epoch file deleted", From: seen.Epoch})
		return nil
	case !ok && seen.Epoch > 0:
		// Another device's: a sync tool may replace a file by deleting
		// it first (Syncthing did, in TestFreshnessSyncthing), so a
		// missing file is behind until it outlasts the grace period;
		// an authentic counter that went back (below) is not.
		rep.add(Issue{Status: Behind, Device: dev, What: "epoch file deleted", From: seen.Epoch, key: "epoch " + dev})
		return nil
	case !ok:
		return nil // a device whose epoch has not arrived, or that never wrote one
	case ef.err != nil:
		rep.add(Issue{Status: verdict(d == v.self), Device: dev, What: "epoch file fails authentication: " + ef.err.Error(), key: "epoch " + dev})
		return nil
	}
	e := ef.epoch
	rep.Devices[dev] = e.Counter
	if e.Counter < seen.Epoch {
		rep.add(Issue{Status: RolledBack, Device: dev, What: "epoch went back", From: seen.Epoch, To: e.Counter})
	}
	now := &Seen{Epoch: e.Counter, Manifests: map[string]uint64{}}
	for _, c := range e.Manifests {
		id := fc.EncodeID(c.DirID[:])
		path, ok := paths[c.DirID]
		if !ok {
			path = "(removed directory " + id + ")"
		}
		mf := v.readManifest(d, c.DirID)
		was := seen.Manifests[id]
		switch {
		case mf.err != nil && was == 0 && d != v.self && !ok:
			// Not arrived yet, of a directory not here (yet): nothing
			// to check it against.
		case mf.err != nil && d == v.self:
			rep.add(Issue{Status: RolledBack, Device: dev, Path: path, What: "manifest missing or failing authentication", From: max(was, c.Counter)})
		case mf.err != nil && !errors.Is(mf.err, fs.ErrNotExist):
			// Another device's, failing: tampered, or caught half
			// written by a sync tool that writes in place.
			rep.add(Issue{Status: Behind, Device: dev, Path: path, What: "manifest fails authentication", key: "manifest " + dev + " " + id})
		case mf.err != nil && was > 0:
			rep.add(Issue{Status: Behind, Device: dev, Path: path, What: "manifest deleted", From: was, key: "manifest " + dev + " " + id})
		case mf.err != nil:
			rep.add(Issue{Status: Behind, Device: dev, Path: path, What: "manifest not arrived yet", From: c.Counter, key: "manifest " + dev + " " + id})
		case mf.m.Counter < was:
			rep.add(Issue{Status: RolledBack, Device: dev, Path: path, What: "manifest went back", From: was, To: mf.m.Counter})
		case mf.m.Counter < c.Counter && d == v.self:
			rep.add(Issue{Status: RolledBack, Device: dev, Path: path, What: "manifest older than its epoch", From: c.Counter, To: mf.m.Counter})
		case mf.m.Counter < c.Counter:
			rep.add(Issue{Status: Behind, Device: dev, Path: path, What: "manifest older than its epoch (not arrived yet?)", From: c.Counter, To: mf.m.Counter, key: "manifest " + dev + " " + id})
		case mf.m.Counter == c.Counter && mf.hash != c.Hash:
			rep.add(Issue{Status: RolledBack, Device: dev, Path: path, What: "manifest is not the one its epoch commits to", From: c.Counter, To: mf.m.Counter})
		}
		if mf.err == nil {
			now.Manifests[id] = mf.m.Counter
		}
	}
	return now
}

// checkDir checks the entries of one directory against the current
// records of every device.
func (v *Vault) checkDir(d walkDir, devs [][fc.IDSize]byte, rep *Report) {
	recs := v.dirRecords(devs, d.id)
	byName := recs.byName()
	for _, n := range allNames(d.fd, byName) {
		a, err := v.r.observe(d.fd, n)
		path := v.plainPath(d, n)
		if err != nil {
			rep.add(Issue{Status: Behind, Path: path, What: "unreadable: " + err.Error()})
			continue
		}
		refs := byName[n]
		if len(refs) == 0 {
			if a.present {
				// A device's change not recorded (or not arrived)
				// yet, or a planted entry (which binding refuses):
				// not a rollback, but not clean.
				rep.add(Issue{Status: Behind, Path: path, What: "not in any manifest"})
			}
			continue
		}
		cur, old := current(refs)
		if slices.ContainsFunc(cur, func(r ref) bool { return holds(a, r.rec) }) {
			continue
		}
		r := cur[0]
		confirmedOlder := slices.ContainsFunc(cur, func(r ref) bool {
			s := v.state.Seen[fc.EncodeID(r.dev[:])]
			return s != nil && r.rec.Stamp <= s.Confirmed && (older(a, r.rec, old) || v.replacedXattrs(a, r.rec))
		})
		rep.add(Issue{Status: verdict(confirmedOlder), Device: fc.EncodeID(r.dev[:]), Path: path,
			What: describe(a, r.rec), Recorded: r.rec.Stamp, key: "entry " + fc.EncodeID(d.id[:]) + " " + n,
			OlderVersion: a.present && a.kind == fc.KindFile && a.id == r.rec.ObjectID && a.gen < r.rec.Gen})
	}
}

func verdict(definite bool) Status {
	if definite {
		return RolledBack
	}
	return Behind
}

// describe says how a differs from record r.
func describe(a actual, r *fc.Record) string {
	switch {
	case !a.present:
		return "deleted (no tombstone)"
	case r.Kind == fc.KindDeleted:
		return "present again after its deletion was recorded"
	case a.kind != r.Kind:
		return fmt.Sprintf("replaced by another kind of entry (%c, recorded %c)", a.kind, r.Kind)
	case a.id != r.ObjectID && a.kind == fc.KindDir:
		return "replaced by another directory (directory ID differs)"
	case a.id != r.ObjectID:
		return "replaced by another object (ID differs)"
	case a.gen < r.Gen:
		return fmt.Sprintf("older version (gen %d, recorded %d)", a.gen, r.Gen)
	default:
		return "xattrs differ from the recorded ones"
	}
}

// escalate gives each Behind issue the time this client first saw it (from
// the state's Pending) and turns those older than Options.Grace into
// RolledBack: a sync in flight delivers what it waits for within the
// grace period; what stays missing longer was taken away. It returns the
// Pending to keep (the issues still there).
func (v *Vault) escalate(rep *Report) map[string]int64 {
	now := v.o.Now()
	pending := map[string]int64{}
	rep.Status = OK
	for i := range rep.Issues {
		is := &rep.Issues[i]
		if is.Status == Behind && is.key != "" {
			first, ok := v.state.Pending[is.key]
			if !ok {
				first = now.Unix()
			}
			pending[is.key] = first
			is.Since = time.Unix(first, 0)
			if now.Sub(is.Since) >= v.o.Grace {
				is.Status = RolledBack
				is.What += fmt.Sprintf(" (behind for longer than the grace period, %s)", v.o.Grace)
			}
		}
		rep.Status = max(rep.Status, is.Status)
	}
	return pending
}
