// Package keys derives the vault's subkeys from the master key with
// HKDF-SHA256, one distinct label per purpose (docs/format.md, "Keys").
package keys

import (
	"crypto/hkdf"
	"crypto/hmac"
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

// LabelLocalID is the HKDF label of a vault's local ID: the name under
// which a machine remembers what it has seen of the vault (its format,
// features and master-key epoch) outside CIPHERDIR, so that a config put
// back from before an upgrade or a revoke is recognised
// (docs/format.md §15a). Not written into the vault.
const LabelLocalID = "encryptfs local vault id"

// LocalIDSize is the length of a local ID.
const LocalIDSize = 16

// LocalID returns HKDF-SHA256(k0, salt = empty, info = LabelLocalID),
// 16 bytes, from the vault's first master key K_0: the one key every
// config of the vault opens, whatever its version (a format-1 config's
// key is K_0; an upgrade keeps it; a revoke seals it under the new key).
// Why safe: a distinct label makes it an independent PRF output of K_0,
// and it is one-way: knowing it reveals no key. It is not secret from
// the machine's other users in the sense of a key, only a name.
func LocalID(k0 []byte) ([LocalIDSize]byte, error) {
	var id [LocalIDSize]byte
	if len(k0) != MasterKeySize {
		return id, fmt.Errorf("%w (got %d)", ErrMasterKey, len(k0))
	}
	b, err := hkdf.Key(sha256.New, k0, nil, LabelLocalID, LocalIDSize)
	if err != nil {
		return id, fmt.Errorf("keys: derive %q: %w", LabelLocalID, err)
	}
	copy(id[:], b)
	return id, nil
}

// LabelUpgradeMarker is the HKDF label of the key that authenticates
// `encryptfs.upgrade`, the marker of a content upgrade in progress
// (docs/format.md §14, "Upgrading").
const LabelUpgradeMarker = "encryptfs v2 upgrade marker"

// UpgradeMarkerTagSize is the length of the marker's tag.
const UpgradeMarkerTagSize = 16

// UpgradeMarkerTag returns HMAC-SHA256(HKDF-SHA256(master, salt = empty,
// info = LabelUpgradeMarker), "encryptfs upgrade marker\x00" ‖ vaultID),
// truncated to 16 bytes: the tag that makes a marker this vault's own.
// Why: whoever writes CIPHERDIR could plant a marker to block every open
// of a vault, or to make the next upgrade adopt a VaultID they chose;
// without the master key they cannot make one that verifies. Why a key
// of its own: a distinct label keeps it independent of every other
// subkey. Why 16 bytes: forging is an online 2^-128 guess, as for the
// header MAC. The caller compares tags with hmac.Equal.
func UpgradeMarkerTag(master, vaultID []byte) ([UpgradeMarkerTagSize]byte, error) {
	var tag [UpgradeMarkerTagSize]byte
	if len(master) != MasterKeySize {
		return tag, fmt.Errorf("%w (got %d)", ErrMasterKey, len(master))
	}
	k, err := hkdf.Key(sha256.New, master, nil, LabelUpgradeMarker, 32)
	if err != nil {
		return tag, fmt.Errorf("keys: derive %q: %w", LabelUpgradeMarker, err)
	}
	defer clear(k)
	m := hmac.New(sha256.New, k)
	m.Write([]byte("encryptfs upgrade marker\x00"))
	m.Write(vaultID)
	copy(tag[:], m.Sum(nil))
	return tag, nil
}
