// Package macpool keeps keyed HMAC-SHA256 states for a key that MACs many
// short messages: a header per file written, a binding per file created,
// a root per file closed.
//
// Why: crypto/hmac's New allocates two SHA-256 states and a copy of the
// padded key, and its first Sum hashes the key's two padded blocks, four
// compressions for a message that fits in one block; a state reused
// through Reset restores the keyed states saved after its first use
// (crypto/hmac keeps them marshaled), so a short message costs two
// compressions and no allocation. In a tar -x of 38,000 files the MACs'
// set-up was about 2% of the daemon's CPU.
//
// The result is crypto/hmac's own HMAC-SHA256, unchanged: a state comes
// from hmac.New and is only ever Reset, written and summed.
//
// The kept states are the key in another form (the SHA-256 states after
// the key's padded blocks). They live as long as the key itself: the
// owner of the key calls Drop where it wipes the key, and a Pool gives
// no state after that. Go gives no way to clear a crypto/hmac state, so
// a dropped state's memory is left to the garbage collector, as the key
// schedule inside every cipher the standard library builds is, and as
// every state made by hmac.New before this package was.
package macpool

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"sync"
)

// maxFree bounds the states a Pool keeps: as many as requests run at once
// on a small machine; more are made and dropped when needed.
const maxFree = 8

// maxScratch bounds the scratch buffer a kept state holds on to (Sum).
const maxScratch = 1024

// Pool hands out HMAC-SHA256 states keyed with one key. It is safe for
// concurrent use.
type Pool struct {
	key []byte // not copied: the owner wipes it, after Drop

	mu      sync.Mutex
	free    []*State
	dropped bool
}

// State is one keyed HMAC-SHA256 state, ready for Write and Sum (the
// embedded hash.Hash); give it back with Put.
type State struct {
	hash.Hash
	// scratch and sum are Pool.Sum's, kept with the state so that a MAC
	// of a message in pieces allocates nothing: a piece written straight
	// to the hash.Hash interface escapes, and a caller's stack array with
	// it.
	scratch []byte
	sum     [sha256.Size]byte
}

// New returns a Pool for key. key is read when a state is made, so it must
// not change until Drop.
func New(key []byte) *Pool { return &Pool{key: key} }

// Get returns a state keyed with the Pool's key, ready for Write. Give it
// back with Put. After Drop it returns nil.
func (p *Pool) Get() *State {
	p.mu.Lock()
	if p.dropped {
		p.mu.Unlock()
		return nil
	}
	if n := len(p.free); n > 0 {
		m := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return m
	}
	p.mu.Unlock()
	return &State{Hash: hmac.New(sha256.New, p.key)}
}

// Put resets m and keeps it for a later Get, unless the Pool was dropped
// or keeps enough already.
func (p *Pool) Put(m *State) {
	m.Reset()
	if cap(m.scratch) > maxScratch {
		m.scratch = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dropped && len(p.free) < maxFree {
		p.free = append(p.free, m)
	}
}

// Sum copies HMAC-SHA256(key, the concatenation of parts) into out (all
// 32 bytes, or its first len(out)), and reports false after Drop. The
// parts are copied into the state's scratch buffer and written at once,
// so they do not escape: no allocation, where writing each to the
// hash.Hash costs one per stack array.
func (p *Pool) Sum(out []byte, parts ...[]byte) bool {
	m := p.Get()
	if m == nil {
		return false
	}
	b := m.scratch[:0]
	for _, part := range parts {
		b = append(b, part...)
	}
	m.Write(b)
	clear(b) // the message does not outlive the call, whatever it was
	m.scratch = b
	copy(out, m.Hash.Sum(m.sum[:0]))
	p.Put(m)
	return true
}

// Drop forgets every kept state; Get returns nil from now on. Call it
// where the key is wiped, before the key is cleared.
func (p *Pool) Drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.free)
	p.free = nil
	p.dropped = true
}
