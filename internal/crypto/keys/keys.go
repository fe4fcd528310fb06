// Package keys derives the vault's subkeys from the master key with
// HKDF-SHA256, one distinct label per purpose (docs/format.md, "Keys").
package keys

import (
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
)

// MasterKeySize is the size of the random master key.
const MasterKeySize = 32

// HKDF info labels, one per purpose. They are part of the on-disk format.
// Why this is safe: distinct labels make the subkeys independent PRF outputs
// of the master key, so no key is ever used by two algorithms or purposes.
const (
	LabelContents    = "encryptfs v1 file contents"
	LabelHeaderMAC   = "encryptfs v1 file header mac"
	LabelNames       = "encryptfs v1 names"
	LabelXattrNames  = "encryptfs v1 xattr names"
	LabelXattrValues = "encryptfs v1 xattr values"
	LabelSymlinks    = "encryptfs v1 symlinks"
	LabelReverse     = "encryptfs v1 reverse ids"
)

// LabelBinding is the HKDF label of the location-binding key of format
// version 2 (docs/design/format-v2.md §4). It is derived on its own
// (DeriveBinding), not by Derive, so that v1 vaults derive exactly the keys
// they always did.
const LabelBinding = "encryptfs v2 binding"

// BindingKeySize is the length of the binding key (an HMAC-SHA256 key).
const BindingKeySize = 32

// DeriveBinding returns HKDF-SHA256(master, salt = empty,
// info = LabelBinding), 32 bytes: the key of internal/crypto/bind. Why
// safe: a distinct label makes it independent of every v1 subkey (see
// Derive). The caller wipes it.
func DeriveBinding(master []byte) ([]byte, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("%w (got %d)", ErrMasterKey, len(master))
	}
	b, err := hkdf.Key(sha256.New, master, nil, LabelBinding, BindingKeySize)
	if err != nil {
		return nil, fmt.Errorf("keys: derive %q: %w", LabelBinding, err)
	}
	return b, nil
}

// ErrMasterKey is returned for a master key of the wrong size.
var ErrMasterKey = errors.New("keys: master key must be 32 bytes")

// Keys holds every subkey a vault uses. Never log or print it.
type Keys struct {
	Contents    []byte // 32: input for per-file content keys
	HeaderMAC   []byte // 32: HMAC-SHA256 key for file headers
	Names       []byte // 64: AES-SIV for file names
	XattrNames  []byte // 64: AES-SIV for xattr names
	XattrValues []byte // 32: XChaCha20-Poly1305 for xattr values
	Symlinks    []byte // 32: XChaCha20-Poly1305 for symlink targets
	Reverse     []byte // 32: HMAC key for reverse-mode IDs and nonces
}

// Derive computes all subkeys from a 32-byte master key.
//
// Each subkey is HKDF-SHA256(secret = master, salt = empty, info = label).
// Why an empty salt is safe: the master key is already 256 uniformly random
// bits, so HKDF-Extract needs no salt to produce a uniform PRK (RFC 5869 §3.1).
func Derive(master []byte) (*Keys, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("%w (got %d)", ErrMasterKey, len(master))
	}
	k := &Keys{}
	for _, d := range []struct {
		dst   *[]byte
		label string
		size  int
	}{
		{&k.Contents, LabelContents, 32},
		{&k.HeaderMAC, LabelHeaderMAC, 32},
		{&k.Names, LabelNames, 64},
		{&k.XattrNames, LabelXattrNames, 64},
		{&k.XattrValues, LabelXattrValues, 32},
		{&k.Symlinks, LabelSymlinks, 32},
		{&k.Reverse, LabelReverse, 32},
	} {
		b, err := hkdf.Key(sha256.New, master, nil, d.label, d.size)
		if err != nil {
			k.Wipe()
			return nil, fmt.Errorf("keys: derive %q: %w", d.label, err)
		}
		*d.dst = b
	}
	return k, nil
}

// Wipe overwrites every subkey with zeros, so a key that is no longer needed
// does not linger in memory longer than the garbage collector keeps it.
func (k *Keys) Wipe() {
	if k == nil {
		return
	}
	for _, b := range [][]byte{k.Contents, k.HeaderMAC, k.Names, k.XattrNames, k.XattrValues, k.Symlinks, k.Reverse} {
		clear(b)
	}
}
