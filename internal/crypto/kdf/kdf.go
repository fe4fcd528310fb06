// Package kdf turns a password into a key-encryption key with Argon2id
// (golang.org/x/crypto/argon2), with parameters stored per vault and bounds
// enforced on load.
package kdf

import (
	"errors"
	"io"
)

// Algorithm is the only KDF of format version 1.
const Algorithm = "argon2id"

// SaltSize is the size of the random salt.
const SaltSize = 32

// ErrParams reports parameters outside the accepted bounds or unknown.
var ErrParams = errors.New("kdf: parameters out of bounds")

// Params are the Argon2id parameters stored in the config. JSON field names
// are part of the format.
type Params struct {
	Algorithm string
	Salt      []byte // encoding/json: standard base64
	Time      uint32
	MemoryKiB uint32
	Threads   uint8
}

// Bounds enforced by Validate (see docs/format.md).
const (
	MinTime, MaxTime           = 1, 64
	MinMemoryKiB, MaxMemoryKiB = 8 * 1024, 4 * 1024 * 1024
	MinThreads, MaxThreads     = 1, 64
)

// New returns params with a fresh salt from rand and the given costs.
func New(rand io.Reader, time, memoryKiB uint32, threads uint8) (Params, error) { panic("TODO") }

// Default returns the default-cost params (about 1 s on the reference machine).
func Default(rand io.Reader) (Params, error) { panic("TODO") }

// Cheapest returns params at the floor of every bound: for tests only.
func Cheapest(rand io.Reader) (Params, error) { panic("TODO") }

// Validate checks the algorithm, the salt size and every bound.
func (p Params) Validate() error { panic("TODO") }

// Key derives the 32-byte key-encryption key. It validates p first.
func (p Params) Key(password []byte) ([]byte, error) { panic("TODO") }
