// Package siv implements AES-SIV (RFC 5297, S2V with AES-CMAC and AES-CTR) on
// top of the standard library's AES block cipher.
//
// Why not a third-party package: the project's rule is standard library and
// golang.org/x/crypto only, and neither ships SIV. This is the RFC's
// construction, unchanged, checked against the RFC's own test vectors.
package siv

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"errors"
	"fmt"
	"sync"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/buf"
)

// Overhead is the size of the synthetic IV prepended to every ciphertext.
const Overhead = 16

// MaxAssociatedData is the most associated-data components S2V accepts
// (RFC 5297 §2.6: n <= 126 for a 128-bit block, counting the plaintext).
const MaxAssociatedData = 126

// ErrOpen is returned when a ciphertext fails authentication.
var ErrOpen = errors.New("siv: message authentication failed")

// ErrKeySize is returned by New for a key that is not 32, 48 or 64 bytes.
var ErrKeySize = errors.New("siv: key must be 32, 48 or 64 bytes")

// SIV is an AES-SIV instance. It is safe for concurrent use.
type SIV struct {
	mac cmac         // S2V key K1 (first half of the key)
	ctr cipher.Block // CTR key K2 (second half)
	// scratch recycles work buffers: byte arrays handed to the cipher.Block
	// interface would otherwise escape to the heap on every call.
	scratch sync.Pool
}

// scratch holds the per-call work buffers.
type scratch struct {
	d, v, x, q [blockSize]byte
	tail       [2 * blockSize]byte
	ctr        [ctrBatch * blockSize]byte
	ks         [ctrBatch * blockSize]byte
}

// ctrBatch is how many counter blocks are encrypted before one XOR pass.
const ctrBatch = 8

// New returns an AES-SIV instance for a 32-, 48- or 64-byte key (AES-128,
// -192 or -256; the first half keys S2V/CMAC, the second half CTR).
func New(key []byte) (*SIV, error) {
	switch len(key) {
	case 32, 48, 64:
	default:
		return nil, fmt.Errorf("%w (got %d)", ErrKeySize, len(key))
	}
	half := len(key) / 2
	macBlock, err := aes.NewCipher(key[:half])
	if err != nil {
		return nil, fmt.Errorf("siv: %w", err)
	}
	ctrBlock, err := aes.NewCipher(key[half:])
	if err != nil {
		return nil, fmt.Errorf("siv: %w", err)
	}
	s := &SIV{mac: newCMAC(macBlock), ctr: ctrBlock}
	s.scratch.New = func() any { return new(scratch) }
	return s, nil
}

// Seal appends V ‖ C to dst. ad are the associated-data components in order;
// for nonce-based use the nonce is passed as the last component.
// plaintext must not overlap the bytes appended to dst. When dst has enough
// capacity, Seal does not allocate for messages shorter than
// streamThreshold and allocates once (the CTR stream) for longer ones.
// More than MaxAssociatedData-1
// components is a programmer error and panics.
func (s *SIV) Seal(dst, plaintext []byte, ad ...[]byte) []byte {
	if len(ad) > MaxAssociatedData-1 {
		panic("siv: too many associated data components")
	}
	sc := s.scratch.Get().(*scratch)
	defer s.scratch.Put(sc)

	ret, out := buf.SliceForAppend(dst, Overhead+len(plaintext))
	s.s2v(sc, ad, plaintext)
	copy(out, sc.v[:])
	s.xorKeyStream(sc, out[Overhead:], plaintext)
	return ret
}

// Open authenticates and decrypts V ‖ C, appending the plaintext to dst.
// The plaintext may overwrite the ciphertext in place (dst =
// ciphertext[Overhead:Overhead]); any other overlap is not allowed. On failure it
// returns ErrOpen and no plaintext (the output bytes are zeroed).
func (s *SIV) Open(dst, ciphertext []byte, ad ...[]byte) ([]byte, error) {
	if len(ad) > MaxAssociatedData-1 {
		panic("siv: too many associated data components")
	}
	if len(ciphertext) < Overhead {
		return nil, ErrOpen
	}
	sc := s.scratch.Get().(*scratch)
	defer s.scratch.Put(sc)

	var tag [Overhead]byte // plain value: never passed to an interface
	copy(tag[:], ciphertext[:Overhead])
	copy(sc.v[:], tag[:])
	ret, out := buf.SliceForAppend(dst, len(ciphertext)-Overhead)
	s.xorKeyStream(sc, out, ciphertext[Overhead:])
	s.s2v(sc, ad, out)
	// Why constant time: a timing leak of the matching prefix would let an
	// attacker forge a tag byte by byte.
	if subtle.ConstantTimeCompare(sc.v[:], tag[:]) != 1 {
		clear(out)
		return nil, ErrOpen
	}
	return ret, nil
}

// streamThreshold is the message size from which CTR runs through
// cipher.NewCTR (the standard library's 8-way interleaved AES-CTR, several
// times faster than one Encrypt call per block) at the price of one small
// allocation per call; shorter messages (names, xattr names) use the
// allocation-free loop below.
const streamThreshold = 512

// xorKeyStream runs AES-CTR from counter Q = V with bits 31 and 63 (of the
// last 64 bits) cleared, as RFC 5297 §2.6 requires, and XORs src into dst.
// sc.v must hold V.
func (s *SIV) xorKeyStream(sc *scratch, dst, src []byte) {
	sc.q = sc.v
	// Why: clearing the two bits lets implementations use 32- or 64-bit
	// counter arithmetic without carries (interoperability, not security).
	sc.q[8] &= 0x7f
	sc.q[12] &= 0x7f
	if len(src) >= streamThreshold {
		// The standard CTR increments the whole 128-bit block big-endian,
		// exactly as RFC 5297 specifies. sc.q, not a local array: a local
		// passed to NewCTR would escape to the heap on every call.
		cipher.NewCTR(s.ctr, sc.q[:]).XORKeyStream(dst, src)
		return
	}
	s.xorBlocks(sc, sc.q, dst, src)
}

// xorBlocks is AES-CTR from counter q, one Encrypt call per block, with no
// allocation.
func (s *SIV) xorBlocks(sc *scratch, q [blockSize]byte, dst, src []byte) {
	for len(src) > 0 {
		n := 0
		for n < ctrBatch && n*blockSize < len(src) {
			copy(sc.ctr[n*blockSize:], q[:])
			increment(&q)
			n++
		}
		for i := 0; i < n; i++ {
			blk := sc.ks[i*blockSize : (i+1)*blockSize]
			s.ctr.Encrypt(blk, sc.ctr[i*blockSize:(i+1)*blockSize])
		}
		m := subtle.XORBytes(dst, src, sc.ks[:min(n*blockSize, len(src))])
		dst, src = dst[m:], src[m:]
	}
}

// increment adds one to a 128-bit big-endian counter (mod 2^128).
func increment(q *[blockSize]byte) {
	for i := blockSize - 1; i >= 0; i-- {
		q[i]++
		if q[i] != 0 {
			return
		}
	}
}
