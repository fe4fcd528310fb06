// Package siv implements AES-SIV (RFC 5297, S2V with AES-CMAC and AES-CTR) on
// top of the standard library's AES block cipher.
//
// Why not a third-party package: the project's rule is standard library and
// golang.org/x/crypto only, and neither ships SIV. This is the RFC's
// construction, unchanged, checked against the RFC's own test vectors.
package siv

import "errors"

// Overhead is the size of the synthetic IV prepended to every ciphertext.
const Overhead = 16

// ErrOpen is returned when a ciphertext fails authentication.
var ErrOpen = errors.New("siv: message authentication failed")

// SIV is an AES-SIV instance. It is safe for concurrent use.
type SIV struct{ _ int }

// New returns an AES-SIV instance for a 32-, 48- or 64-byte key (AES-128,
// -192 or -256; the first half keys S2V/CMAC, the second half CTR).
func New(key []byte) (*SIV, error) { panic("TODO") }

// Seal appends V ‖ C to dst. ad are the associated-data components in order;
// for nonce-based use the nonce is passed as the last component.
func (s *SIV) Seal(dst, plaintext []byte, ad ...[]byte) []byte { panic("TODO") }

// Open authenticates and decrypts V ‖ C, appending the plaintext to dst.
func (s *SIV) Open(dst, ciphertext []byte, ad ...[]byte) ([]byte, error) { panic("TODO") }
