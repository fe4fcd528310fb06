// Package fresh detects rollback and deletion of a vault's files,
// directories and xattrs without breaking sync (format v2 feature flag
// "Freshness"; docs/format.md §15, docs/design/format-v2.md §6).
//
// Each client of a vault is a device with a random DeviceID and a counter,
// kept in local state outside CIPHERDIR. A device records, per directory
// it changes, what each name it touched now is (kind, object ID, file
// gen, xattr digest, or a tombstone) in its own MAC'd manifest, and
// commits to its manifests with a MAC'd epoch file. It writes only its own
// files, so a sync tool never sees two writers of one file. Check compares
// the vault with the manifests and with what this client saw before:
// what went back is "rolled back", what a sync in flight could explain is
// "behind".
//
// The writer is told by the session's engine, by (directory ID, backing
// name), what each operation changed (Changes, told.go): it notes those
// names and, in batches (Flush: every few seconds, and at unmount), finds
// each directory again by its ID, reads the names back and records them.
// It never sits in the path of an operation beyond a map insert.
package fresh

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/encryptfs/encryptfs/internal/backing"
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"github.com/encryptfs/encryptfs/internal/fault"
	"golang.org/x/sys/unix"
)

// Errors of the package.
var (
	// ErrNoState: the state directory has no state for this vault (an
	// offline command on a machine that never mounted it).
	ErrNoState = fault.New(fault.Other, "fresh: no local freshness state for this vault on this machine")
	// ErrBadState: the local state file does not parse.
	ErrBadState = fault.New(fault.Other, "fresh: local freshness state is corrupt")
	// ErrLocked: another process (a mount) writes this vault's state.
	ErrLocked = fault.New(fault.Other, "fresh: the vault's local freshness state is held by a mount on this machine")
	// ErrRolledBack: a strict start (Options.Strict) found that the
	// vault went back.
	ErrRolledBack = fault.New(fault.RolledBack, "freshness: the vault was rolled back")
)

// DefaultInterval is how often a mount writes its manifests.
const DefaultInterval = 5 * time.Second

// Options configure freshness for one session.
type Options struct {
	// StateDir is the vault's local state directory; "": StateDir(
	// DefaultStateRoot(os.Getenv), VaultID).
	StateDir string
	// VaultID names the state directory (Params.VaultID).
	VaultID []byte
	// Interval between batches; 0: DefaultInterval; negative: no timer
	// (tests call Flush).
	Interval time.Duration
	// Offline: the session only checks (encryptfs freshness status and
	// accept): no batches, the local state is written only by Check and
	// Accept.
	Offline bool
	// Log receives the mount's freshness lines (the start-up report,
	// batch errors); nil: none.
	Log func(string)
	// Rand draws a new DeviceID; nil: crypto/rand.
	Rand io.Reader
	// Grace is how long a "behind" state may last before it counts as
	// rolled back (a sync delivers what the records wait for well within
	// it); 0: DefaultGrace.
	Grace time.Duration
	// Now is the clock; nil: time.Now (tests move it).
	Now func() time.Time
	// Strict: Start refuses a vault that went back (ErrRolledBack)
	// instead of logging it and going on, unless the last mount on this
	// machine did not end cleanly (its own unrecorded changes would look
	// the same) or this device records the vault for the first time.
	Strict bool
	// Buckets: the vault packs each device's manifests into buckets
	// (feature flag "ManifestBuckets", buckets.go) instead of one file
	// per directory.
	Buckets bool
}

// DefaultGrace is Options.Grace's default: a day, longer than a sync tool
// takes to deliver a batch's few small files once it delivered any of
// the batch.
const DefaultGrace = 24 * time.Hour

// Vault is freshness for one open vault.
type Vault struct {
	dir      string // CIPHERDIR as given
	root     int    // CIPHERDIR's fd: every freshness file is reached beneath it
	o        Options
	stateDir string
	keyed    *fc.Keyed
	r        Reader
	self     [fc.IDSize]byte
	lock     *os.File // nil: another process holds the state (read-only)

	batchMu sync.Mutex                 // one batch at a time
	noted   notedChanges               // what the engine told since the last batch (noted.go)
	staged  map[[fc.IDSize]byte][]byte // the batch's manifests, for flushBuckets (under batchMu)
	tables  bucketTables               // bucket tables read (buckets.go)
	batches atomic.Uint64              // batches that took v.noted (Told.Batches)
	trusted atomic.Uint64              // names recorded as created, unread (batch.go nameNow)
	walks   atomic.Uint64              // walks of the whole tree (batch.go walk)
	mu      sync.Mutex                 // guards the rest
	state   *State
	own     map[[fc.IDSize]byte]fc.EpochEntry
	started bool
	// fullPending: the next batches record the whole tree until one
	// succeeds: Start's whole-tree batch failed (no space), the engine
	// told a change it could not name (Told.All), or an older state's
	// unrecorded directory could not be found (noteUnrecorded).
	fullPending bool
	stop        chan struct{}
	done        chan struct{}
}

// New opens freshness for the vault in dir with its master key. It reads
// (or creates) the local state and takes its lock; it writes nothing
// until Start or Accept.
func New(dir string, masterKey []byte, o Options) (*Vault, error) {
	if o.StateDir == "" {
		if len(o.VaultID) == 0 {
			return nil, errors.New("fresh: no VaultID and no state directory")
		}
		o.StateDir = StateDir(DefaultStateRoot(os.Getenv), o.VaultID)
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Grace == 0 {
		o.Grace = DefaultGrace
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	key, err := fc.DeriveKey(masterKey)
	if err != nil {
		return nil, err
	}
	defer clear(key)
	keyed, err := fc.New(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("fresh: state directory: %w", err)
	}
	lock, ok, err := lockState(o.StateDir)
	if err != nil {
		return nil, fmt.Errorf("fresh: state directory: %w", err)
	}
	st, err := loadState(o.StateDir, o.Rand, ok)
	var root int
	if err == nil {
		root, err = backing.OpenRoot(dir)
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		return nil, err
	}
	v := &Vault{dir: dir, root: root, o: o, stateDir: o.StateDir, keyed: keyed, self: [fc.IDSize]byte(st.Device),
		lock: lock, state: st,
		noted: notedChanges{notes: notesOf{}}}
	if lock != nil && !ok {
		lock.Close()
		v.lock = nil
	}
	return v, nil
}

// SetReader gives v the session's header parser and name decryption; the
// session calls it once its engine and tree exist, before Start.
func (v *Vault) SetReader(r Reader) { v.r = r }

// Device returns this client's DeviceID in its backing-name form.
func (v *Vault) Device() string { return fc.EncodeID(v.self[:]) }

// StateDir returns the local state directory in use.
func (v *Vault) StateDir() string { return v.stateDir }

// Start begins writing: after an unclean end (the state is dirty) it
// logs what differs and records the vault as it is (Recover); a vault
// no device has recorded yet is recorded whole. Then it batches every
// Interval until Close.
func (v *Vault) Start() error {
	if v.lock == nil {
		return ErrLocked
	}
	v.loadOwn()
	epochs, err := v.readEpochs()
	if err != nil {
		return err
	}
	// The check comes first: what the recordings below would adopt is
	// logged before it is.
	rep, err := v.check(true)
	if err != nil {
		return err
	}
	first := len(epochs) == 0 && v.state.seen(v.Device()).Epoch == 0
	switch {
	case v.state.Dirty:
		// Changes of the last mount may be unrecorded, and this device
		// cannot tell its own from others': it records the vault as it
		// is (the crash window, format.md §15).
		if rep.Status != OK {
			v.log("freshness: the last mount on this machine did not end cleanly; recording the vault as it is now. Before that it was:\n" + rep.String())
		}
		err = v.startBatch(true)
	case first:
		// The first device of a vault records all of it.
		err = v.startBatch(true)
	case rep.Status == RolledBack && v.o.Strict:
		return fmt.Errorf("%w: %d issue(s)", ErrRolledBack, len(rep.Issues))
	case rep.Status != OK:
		v.log(rep.String())
	}
	if !v.state.Dirty && !first && len(v.state.Unrecorded) > 0 {
		// The last mount ended cleanly but could not record these
		// (unrecorded.go): recorded now, after the check, and nothing
		// else adopted.
		v.noteUnrecorded(v.state.Unrecorded)
		err = v.startBatch(false)
	}
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.state.Unrecorded = nil // noted again, or recorded
	v.state.Dirty = true
	err = v.state.save(v.stateDir)
	v.started = true
	v.mu.Unlock()
	if err != nil {
		return err
	}
	if v.o.Interval > 0 {
		v.stop, v.done = make(chan struct{}), make(chan struct{})
		go v.loop()
	}
	return nil
}

func (v *Vault) loop() {
	defer close(v.done)
	background()
	t := time.NewTicker(v.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			if err := v.Flush(); err != nil {
				v.log("freshness: writing manifests: " + err.Error())
			}
		}
	}
}

func (v *Vault) log(s string) {
	if v.o.Log != nil {
		v.o.Log(s)
	}
}

// Flush records every change noted since the last batch: the manifests
// of the directories changed, then the epoch. The writer's timer calls it
// (Options.Interval) and Close does a last batch; an fsync or syncfs
// through the mount does not (docs/format.md §15, "Not covered yet").
func (v *Vault) Flush() error { return v.batch(false) }

// startBatch is Start's batch. A batch that fails for want of space (a
// full CIPHERDIR) does not keep the vault from mounting, which is how the
// user frees space: it is logged, and the mount's batches take it up
// again (a whole-tree batch stays pending until one succeeds). Other
// failures refuse the mount, as before.
func (v *Vault) startBatch(all bool) error {
	err := v.batch(all)
	if err == nil || !errors.Is(err, unix.ENOSPC) && !errors.Is(err, unix.EDQUOT) {
		return err
	}
	v.mu.Lock()
	v.fullPending = v.fullPending || all
	v.mu.Unlock()
	v.log("freshness: could not record the vault (" + err.Error() + "); mounting anyway: the mount records it once CIPHERDIR has room again")
	return nil
}

// Close ends a writer: the last batch, then a clean state (not dirty).
// It is idempotent.
func (v *Vault) Close() error {
	if v == nil {
		return nil
	}
	var err error
	v.mu.Lock()
	started := v.started
	v.started = false
	v.mu.Unlock()
	if started {
		if v.stop != nil {
			close(v.stop)
			<-v.done
		}
		err = v.batch(false)
		v.mu.Lock()
		switch {
		case err == nil:
			v.state.Dirty, v.state.Unrecorded = false, nil
		case !v.fullPending:
			// A clean end with changes left to record: the next
			// mount records them (unrecorded.go), and adopts nothing
			// else, as it would after a crash.
			v.state.Dirty, v.state.Unrecorded = false, v.noted.list()
		}
		if serr := v.state.save(v.stateDir); err == nil {
			err = serr
		}
		v.mu.Unlock()
	}
	if v.lock != nil {
		v.lock.Close()
		v.lock = nil
	}
	if v.root >= 0 {
		backing.Close(v.root)
		v.root = -1
	}
	v.keyed.Wipe()
	return err
}

// crash ends a writer as a crash would (tests): the timer stops and the
// lock goes, without the last batch and with the state left dirty.
func (v *Vault) crash() {
	v.mu.Lock()
	started := v.started
	v.started = false
	v.mu.Unlock()
	if started && v.stop != nil {
		close(v.stop)
		<-v.done
	}
	if v.lock != nil {
		v.lock.Close()
		v.lock = nil
	}
}
