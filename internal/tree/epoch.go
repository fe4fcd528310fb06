package tree

import (
	"fmt"
	"sync"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// Master-key epochs (format v2, "KeyEpochs"; docs/format.md §3b). A
// directory's v2 ID file records the epoch of its name key: names in it
// are encrypted under that epoch's names key, and its own bindings are
// made with that epoch's binding key. A new directory gets the current
// epoch; a directory keeps its epoch for life (a name added to an older
// directory is readable to the holder of that epoch's key: rekey is not
// implemented). Symlink targets and xattrs stay under epoch 0's keys.
//
// Why the bindings under the epoch's own binding key: the ID file has no
// MAC of its own; its bindings are what authenticate it. Were they all
// made with epoch 0's key, the storage could rewrite a directory's epoch
// from e to 0 (the bindings would still match) and every name added to it
// afterwards would be encrypted under K_0, which a revoked key holder
// has. With epoch e's binding key, such a file fails its binding check
// (bind.ErrMisplaced). Files need no such rule: a file header's epoch is
// under the header MAC of that epoch.

// Epoch is what a bound tree needs of one epoch after 0: its names key
// and its binder (keys.Derive(K_e).Names, keys.DeriveBinding(K_e)).
type Epoch struct {
	Names  []byte
	Binder *bind.Binder
}

// Epochs is the part of a Tree that owns one rule: which key a
// directory's names and its ID file's bindings are under is the epoch its
// verified ID file records (or the current one, for a directory made
// here), never one that an unverified file suggests. It holds the names
// ciphers and binders of epochs 1.. (epoch 0's are base and baseBinder),
// the epoch of new directories, and the epochs of the directories seen
// (by ID; none in a vault without epochs).
// Why a map: the tree passes directory IDs, not ID files, to the name
// functions; every ID it hands out was read (and checked) or made by it
// first, which is when its epoch is noted. It grows by one entry (about
// 50 bytes) per directory used while mounted, in a vault with epochs.
//
// Why two maps (issue 18, I5): only an ID file whose bindings verified
// (check) or that the tree wrote itself may say which key encrypts a
// directory's names (dir). An unbound ID file (DirIDs.ReadUnchecked: fsck
// walking a misplaced directory, freshness naming a path for a report)
// gives a hint, used only to decrypt names, only for an ID that no
// verified file has spoken for, and never to encrypt one: else the
// storage could plant a copy of a directory's ID file with an older epoch
// anywhere the walk reads it, and names added to the real directory
// afterwards would be under that epoch's key, which a revoked holder has.
type Epochs struct {
	base       *names.Cipher   // epoch 0's names cipher
	baseBinder *bind.Binder    // epoch 0's binder; nil without location binding
	names      []*names.Cipher // [i]: epoch i+1
	binders    []*bind.Binder
	current    uint32

	mu   sync.RWMutex
	dir  map[[names.DirIDSize]byte]uint32 // verified (or made here)
	hint map[[names.DirIDSize]byte]uint32 // unverified, ≥ 1, not in dir
}

// Set gives a bound tree the keys of epochs 1..len(epochs) and
// makes current (≤ len(epochs)) the epoch of new directories. Call it
// before the tree is used.
func (ep *Epochs) Set(epochs []Epoch, current uint32) error {
	if ep.baseBinder == nil {
		return fmt.Errorf("tree: epochs need location binding")
	}
	if uint64(current) > uint64(len(epochs)) {
		return fmt.Errorf("tree: current epoch %d without its keys", current)
	}
	for _, e := range epochs {
		c, err := names.New(e.Names)
		if err != nil {
			return fmt.Errorf("tree: names: %w", err)
		}
		ep.names = append(ep.names, c)
		ep.binders = append(ep.binders, e.Binder)
	}
	ep.current = current
	return nil
}

// known reports whether the tree has the keys of epoch e.
func (ep *Epochs) known(e uint32) bool { return uint64(e) <= uint64(len(ep.names)) }

// binder is the binder of directories of epoch e (known(e)).
func (ep *Epochs) binder(e uint32) *bind.Binder {
	if e == 0 {
		return ep.baseBinder
	}
	return ep.binders[e-1]
}

// check checks a v2 ID file's bindings (id at p, in epoch e) and notes
// the directory's epoch. An epoch without keys fails like a wrong binding.
func (ep *Epochs) check(id []byte, e uint32, p bind.Place, slots []bind.Binding) error {
	if !ep.known(e) {
		return fmt.Errorf("%w: its master-key epoch %d has no key here", bind.ErrMisplaced, e)
	}
	if err := ep.binder(e).Check(bind.KindDir, id, p, slots); err != nil {
		return err
	}
	ep.note(id, e)
	return nil
}

// note records that directory id is of epoch e, from an ID file
// whose bindings verified or that the tree made: it replaces any hint.
// Epoch 0 is noted too once the tree has epochs (so that no later hint
// speaks for the directory); a vault without epochs keeps no entry.
func (ep *Epochs) note(id []byte, e uint32) {
	if len(id) != names.DirIDSize || e == 0 && len(ep.names) == 0 {
		return
	}
	k := [names.DirIDSize]byte(id)
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.dir == nil {
		ep.dir = map[[names.DirIDSize]byte]uint32{}
	}
	ep.dir[k] = e
	delete(ep.hint, k)
}

// addHint records that an unverified ID file says directory id is of
// epoch e: used to decrypt its names while no verified file has spoken
// for id (see Epochs), never to encrypt.
func (ep *Epochs) addHint(id []byte, e uint32) {
	if len(id) != names.DirIDSize {
		return
	}
	k := [names.DirIDSize]byte(id)
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if _, noted := ep.dir[k]; noted {
		return
	}
	if e == 0 {
		delete(ep.hint, k)
		return
	}
	if ep.hint == nil {
		ep.hint = map[[names.DirIDSize]byte]uint32{}
	}
	ep.hint[k] = e
}

// of is the epoch of directory id (0 if not noted): the verified
// one, and with hinted, else the hint.
func (ep *Epochs) of(id []byte, hinted bool) uint32 {
	if len(id) != names.DirIDSize {
		return 0
	}
	k := [names.DirIDSize]byte(id)
	ep.mu.RLock()
	defer ep.mu.RUnlock()
	if e, ok := ep.dir[k]; ok || !hinted {
		return e
	}
	return ep.hint[k]
}

// namesOf is the names cipher that decrypts the names of directory dirID:
// its epoch's (a hint where no verified ID file has spoken).
func (ep *Epochs) namesOf(dirID []byte) *names.Cipher {
	return ep.namesOfEpoch(ep.of(dirID, true))
}

// namesToEncrypt is the names cipher that encrypts a new name in
// directory dirID: its verified epoch's only.
func (ep *Epochs) namesToEncrypt(dirID []byte) *names.Cipher {
	return ep.namesOfEpoch(ep.of(dirID, false))
}

func (ep *Epochs) namesOfEpoch(e uint32) *names.Cipher {
	if e != 0 {
		return ep.names[e-1]
	}
	return ep.base
}

// Of is the master-key epoch whose names key decrypts directory
// dirID's names, as noted when its ID file was read or written (0 without
// epochs): the verified one, else an unverified hint.
func (ep *Epochs) Of(dirID []byte) uint32 { return ep.of(dirID, true) }
