// Package bind computes the location bindings of format version 2
// (docs/design/format-v2.md §4, docs/format.md "v2: location binding"): a
// MAC that ties an object (a directory's ID, a regular file's ID) to the
// place it is stored at, its parent directory's ID and its full encrypted
// name. Directory ID files and file headers carry up to a few bindings; a
// reader accepts the object only where one of them matches.
//
// It does no I/O and holds no state beyond its key (and states keyed
// with it, internal/crypto/internal/macpool).
package bind

import (
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/macpool"
)

// Sizes of the format.
const (
	// Size is a binding's length. Why 16 bytes is safe: a forged binding
	// is a 2^-128 guess per try, each try an online read through the
	// mount; the same truncation as the v1 header MAC (format.md §5.1).
	Size = 16
	// KeySize is the binding key's length (HKDF output, keys.LabelBinding).
	KeySize = 32
	// IDSize is the size of an object ID and of a parent directory ID
	// (names.DirIDSize, content.FileIDSize).
	IDSize = 16
)

// Domain is the prefix of every binding MAC input. Why: the binding key
// is used for nothing else, and the fixed prefix keeps any later use of
// it (with a different prefix) from ever computing the same input.
const Domain = "encryptfs v2 bind"

// Kind says what an object is; it is part of the MAC input, so a
// directory's binding is never valid for a file with the same ID bytes.
type Kind byte

// The kinds of bound objects.
const (
	KindFile Kind = 'f'
	KindDir  Kind = 'd'
)

// Binding is one binding value; the zero value is an empty slot (a real
// binding is all zeros with probability 2^-128).
type Binding [Size]byte

// IsZero reports whether b is an empty slot.
func (b Binding) IsZero() bool { return b == Binding{} }

// Errors.
var (
	// ErrMisplaced: an object (a directory or a file's contents) is not
	// bound to the place it was found at: moved, copied or grafted there
	// by someone without the key. Classified as corrupt (EIO).
	ErrMisplaced = errors.New("bind: object is not bound to the place it was found at")
	// ErrKey: a binding key of the wrong size.
	ErrKey = errors.New("bind: binding key must be 32 bytes")
	// ErrWiped: the binder's key was wiped.
	ErrWiped = errors.New("bind: key was wiped")
)

// Place is where an object was found: its parent directory's ID and its
// full encrypted name (for a long name, the name in its sidecar, never the
// hashed backing name). The root directory's place is (VaultID, "").
type Place struct {
	ParentID []byte
	EncName  string
}

// Binder computes and checks bindings under one vault's binding key.
// Safe for concurrent use.
type Binder struct {
	mu  sync.RWMutex
	key []byte
	// linksKey is K_links, the links file's MAC key (links.go).
	linksKey []byte
	wiped    bool
	// macs keeps keyed states of key (a binding per file created or
	// opened); dropped at Wipe.
	macs *macpool.Pool
}

// New keeps a copy of the 32-byte binding key.
func New(key []byte) (*Binder, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("%w (got %d)", ErrKey, len(key))
	}
	lk, err := linksKey(key)
	if err != nil {
		return nil, fmt.Errorf("bind: links key: %w", err)
	}
	k := append([]byte(nil), key...)
	return &Binder{key: k, linksKey: lk, macs: macpool.New(k)}, nil
}

// Wipe clears the key; later Sum and Match fail (Sum panics, Match
// reports no match).
func (b *Binder) Wipe() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.macs.Drop()
	clear(b.key)
	clear(b.linksKey)
	b.wiped = true
}

// Sum returns the binding of object objectID of kind k at place p:
//
//	HMAC-SHA256(K_bind, Domain ‖ kind ‖ objectID ‖ parentID ‖ u16 len(encName) ‖ encName)[0:16]
//
// The length prefix makes the input injective (the IDs are fixed-size).
// IDs of another size or a name longer than 65535 bytes are programmer
// errors and panic, as does Sum after Wipe.
func (b *Binder) Sum(k Kind, objectID []byte, p Place) Binding {
	if len(objectID) != IDSize || len(p.ParentID) != IDSize || len(p.EncName) > math.MaxUint16 {
		panic("bind: object ID, parent ID or name of a wrong size")
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.wiped {
		panic("bind: Sum after Wipe")
	}
	var n [2]byte
	binary.BigEndian.PutUint16(n[:], uint16(len(p.EncName)))
	var out Binding
	b.macs.Sum(out[:], []byte(Domain), []byte{byte(k)}, objectID, p.ParentID, n[:], []byte(p.EncName))
	return out
}

// Match reports whether one of slots is the binding of objectID at p.
// Every slot is compared in constant time (subtle.ConstantTimeCompare),
// and all of them always, so the time taken does not say which matched.
// An empty slot matches only if the binding itself were all zeros
// (probability 2^-128), so empty slots need no special case.
func (b *Binder) Match(k Kind, objectID []byte, p Place, slots []Binding) bool {
	b.mu.RLock()
	wiped := b.wiped
	b.mu.RUnlock()
	if wiped {
		return false
	}
	want := b.Sum(k, objectID, p)
	ok := 0
	for _, s := range slots {
		ok |= subtle.ConstantTimeCompare(s[:], want[:])
	}
	return ok == 1
}

// Check is Match returning ErrMisplaced when nothing matches, and
// ErrWiped after Wipe (a closed session is not a misplaced object).
func (b *Binder) Check(k Kind, objectID []byte, p Place, slots []Binding) error {
	b.mu.RLock()
	wiped := b.wiped
	b.mu.RUnlock()
	if wiped {
		return ErrWiped
	}
	if !b.Match(k, objectID, p, slots) {
		return ErrMisplaced
	}
	return nil
}
