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

// dirEpochs is the tree's epoch state: the names ciphers of epochs 1..,
// the epoch of new directories, and the epochs of the directories seen
// (by ID; none in a vault without epochs).
// Why a map: the tree passes directory IDs, not ID files, to the name
// functions; every ID it hands out was read (and checked) or made by it
// first, which is when its epoch is noted. It grows by one entry (about
// 50 bytes) per directory used while mounted, in a vault with epochs.
//
// Why two maps (issue 18, I5): only an ID file whose bindings verified
// (checkDir) or that the tree wrote itself may say which key encrypts a
// directory's names (dir). An unbound ID file (ReadDirIDUnchecked: fsck
// walking a misplaced directory, freshness naming a path for a report)
// gives a hint, used only to decrypt names, only for an ID that no
// verified file has spoken for, and never to encrypt one: else the
// storage could plant a copy of a directory's ID file with an older epoch
// anywhere the walk reads it, and names added to the real directory
// afterwards would be under that epoch's key, which a revoked holder has.
type dirEpochs struct {
	names   []*names.Cipher // [i]: epoch i+1
	binders []*bind.Binder
	current uint32

	mu   sync.RWMutex
	dir  map[[names.DirIDSize]byte]uint32 // verified (or made here)
	hint map[[names.DirIDSize]byte]uint32 // unverified, ≥ 1, not in dir
}

// SetEpochs gives a bound tree the keys of epochs 1..len(epochs) and
// makes current (≤ len(epochs)) the epoch of new directories. Call it
// before the tree is used.
func (t *Tree) SetEpochs(epochs []Epoch, current uint32) error {
	if t.bind == nil {
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
		t.ep.names = append(t.ep.names, c)
		t.ep.binders = append(t.ep.binders, e.Binder)
	}
	t.ep.current = current
	return nil
}

// known reports whether the tree has the keys of epoch e.
func (t *Tree) known(e uint32) bool { return uint64(e) <= uint64(len(t.ep.names)) }

// dirBinder is the binder of directories of epoch e (known(e)).
func (t *Tree) dirBinder(e uint32) *bind.Binder {
	if e == 0 {
		return t.bind.Binder
	}
	return t.ep.binders[e-1]
}

// checkDir checks a v2 ID file's bindings (id at p, in epoch e) and notes
// the directory's epoch. An epoch without keys fails like a wrong binding.
func (t *Tree) checkDir(id []byte, e uint32, p bind.Place, slots []bind.Binding) error {
	if !t.known(e) {
		return fmt.Errorf("%w: its master-key epoch %d has no key here", bind.ErrMisplaced, e)
	}
	if err := t.dirBinder(e).Check(bind.KindDir, id, p, slots); err != nil {
		return err
	}
	t.noteEpoch(id, e)
	return nil
}

// noteEpoch records that directory id is of epoch e, from an ID file
// whose bindings verified or that the tree made: it replaces any hint.
// Epoch 0 is noted too once the tree has epochs (so that no later hint
// speaks for the directory); a vault without epochs keeps no entry.
func (t *Tree) noteEpoch(id []byte, e uint32) {
	if len(id) != names.DirIDSize || e == 0 && len(t.ep.names) == 0 {
		return
	}
	k := [names.DirIDSize]byte(id)
	t.ep.mu.Lock()
	defer t.ep.mu.Unlock()
	if t.ep.dir == nil {
		t.ep.dir = map[[names.DirIDSize]byte]uint32{}
	}
	t.ep.dir[k] = e
	delete(t.ep.hint, k)
}

// hintEpoch records that an unverified ID file says directory id is of
// epoch e: used to decrypt its names while no verified file has spoken
// for id (see dirEpochs), never to encrypt.
func (t *Tree) hintEpoch(id []byte, e uint32) {
	if len(id) != names.DirIDSize {
		return
	}
	k := [names.DirIDSize]byte(id)
	t.ep.mu.Lock()
	defer t.ep.mu.Unlock()
	if _, noted := t.ep.dir[k]; noted {
		return
	}
	if e == 0 {
		delete(t.ep.hint, k)
		return
	}
	if t.ep.hint == nil {
		t.ep.hint = map[[names.DirIDSize]byte]uint32{}
	}
	t.ep.hint[k] = e
}

// dirEpoch is the epoch of directory id (0 if not noted): the verified
// one, and with hinted, else the hint.
func (t *Tree) dirEpoch(id []byte, hinted bool) uint32 {
	if len(id) != names.DirIDSize {
		return 0
	}
	k := [names.DirIDSize]byte(id)
	t.ep.mu.RLock()
	defer t.ep.mu.RUnlock()
	if e, ok := t.ep.dir[k]; ok || !hinted {
		return e
	}
	return t.ep.hint[k]
}

// namesOf is the names cipher that decrypts the names of directory dirID:
// its epoch's (a hint where no verified ID file has spoken).
func (t *Tree) namesOf(dirID []byte) *names.Cipher {
	return t.namesOfEpoch(t.dirEpoch(dirID, true))
}

// namesToEncrypt is the names cipher that encrypts a new name in
// directory dirID: its verified epoch's only.
func (t *Tree) namesToEncrypt(dirID []byte) *names.Cipher {
	return t.namesOfEpoch(t.dirEpoch(dirID, false))
}

func (t *Tree) namesOfEpoch(e uint32) *names.Cipher {
	if e != 0 {
		return t.ep.names[e-1]
	}
	return t.names
}

// DirEpoch is the master-key epoch whose names key decrypts directory
// dirID's names, as noted when its ID file was read or written (0 without
// epochs): the verified one, else an unverified hint.
func (t *Tree) DirEpoch(dirID []byte) uint32 { return t.dirEpoch(dirID, true) }
