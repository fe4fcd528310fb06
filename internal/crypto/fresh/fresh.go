// Package fresh is the cryptography and the byte layout of freshness
// (format v2 feature flag "Freshness", docs/format.md §15): the MAC key,
// the per-device manifests of directories and the per-device epoch files.
// It imports only the standard library: what a manifest means (which
// state is newer, what is a rollback) is internal/fresh's business.
package fresh

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Label is the HKDF label of the freshness key. Why a key of its own: a
// distinct label makes it independent of every v1 subkey and of the
// binding key (HKDF outputs under distinct labels are independent PRF
// outputs), so a manifest MAC can never be confused with a header MAC or
// a binding, whatever their inputs; and v1 vaults derive exactly the keys
// they always did.
const Label = "encryptfs v2 freshness"

// KeySize is the length of the freshness key (an HMAC-SHA256 key).
const KeySize = 32

// IDSize is the size of a DeviceID and of the directory IDs manifests are
// keyed by.
const IDSize = 16

// MACSize is the length of the MAC ending each file: full HMAC-SHA256.
// These files are small and few; there is no reason to truncate.
const MACSize = sha256.Size

// HashSize is the length of the manifest hash an epoch commits to.
const HashSize = sha256.Size

// Errors of parsing and verifying.
var (
	// ErrMasterKey: a master key of the wrong size.
	ErrMasterKey = errors.New("fresh: master key must be 32 bytes")
	// ErrTampered: a manifest or epoch file whose MAC does not verify
	// (edited, truncated, or made under another vault's key).
	ErrTampered = errors.New("fresh: manifest or epoch file fails authentication")
	// ErrMalformed: a manifest or epoch file that does not parse.
	ErrMalformed = errors.New("fresh: malformed manifest or epoch file")
)

// DeriveKey returns HKDF-SHA256(master, salt = empty, info = Label), 32
// bytes. The caller wipes it.
func DeriveKey(master []byte) ([]byte, error) {
	if len(master) != 32 {
		return nil, fmt.Errorf("%w (got %d)", ErrMasterKey, len(master))
	}
	return hkdf.Key(sha256.New, master, nil, Label, KeySize)
}

// Domain strings prefixed to the MAC input of each file type: one key
// serves both, and a manifest's bytes can never verify as an epoch's (or
// the reverse) because the MAC inputs differ in their first bytes.
const (
	manifestDomain = "encryptfs v2 manifest\x00"
	epochDomain    = "encryptfs v2 epoch\x00"
)

// Backing names of the freshness files (all in the vault's root; D is
// EncodeID(DeviceID)):
//
//	encryptfs.epoch.D       device D's epoch file
//	encryptfs.manifests.D/  directory of device D's manifests, one file
//	                        per plaintext directory, named EncodeID(dirID)
const (
	EpochPrefix     = "encryptfs.epoch."
	ManifestsPrefix = "encryptfs.manifests."
	// TempSuffix ends a file being written in a manifests directory; it
	// is renamed into place when complete.
	TempSuffix = ".tmp"
)

// EncodeID is the form of an ID in a backing name: base64url without
// padding (22 characters).
func EncodeID(id []byte) string { return base64.RawURLEncoding.EncodeToString(id) }

// DecodeID parses EncodeID's form; ok is false for anything else.
func DecodeID(s string) ([]byte, bool) {
	if len(s) != 22 {
		return nil, false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != IDSize || EncodeID(b) != s {
		return nil, false
	}
	return b, true
}

// IsName reports whether backing name b of the root is a freshness file
// or directory (a reader skips these; fsck does not call them foreign).
func IsName(b string) bool {
	for _, p := range []string{EpochPrefix, ManifestsPrefix} {
		if rest, ok := strings.CutPrefix(b, p); ok {
			_, ok := DecodeID(strings.TrimSuffix(rest, TempSuffix))
			return ok
		}
	}
	return false
}

// Keyed computes MACs with the freshness key.
type Keyed struct{ key []byte }

// New returns a Keyed for key (KeySize bytes, kept by reference: Wipe
// clears it).
func New(key []byte) (*Keyed, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("fresh: key must be %d bytes", KeySize)
	}
	return &Keyed{key: append([]byte(nil), key...)}, nil
}

// Wipe overwrites the key.
func (k *Keyed) Wipe() { clear(k.key) }

func (k *Keyed) mac(domain string, body []byte) []byte {
	h := hmac.New(sha256.New, k.key)
	h.Write([]byte(domain))
	h.Write(body)
	return h.Sum(nil)
}

// seal appends the MAC of body under domain.
func (k *Keyed) seal(domain string, body []byte) []byte {
	return append(body, k.mac(domain, body)...)
}

// open checks the MAC ending b (constant time) and returns the body.
func (k *Keyed) open(domain string, b []byte) ([]byte, error) {
	if len(b) < MACSize {
		return nil, ErrMalformed
	}
	body, tag := b[:len(b)-MACSize], b[len(b)-MACSize:]
	if !hmac.Equal(k.mac(domain, body), tag) {
		return nil, ErrTampered
	}
	return body, nil
}

// Hash is the hash an epoch commits a manifest file by: SHA-256 of its
// bytes, MAC included. Why SHA-256 without a key: the manifest is MAC'd
// already; the hash only pins which of the device's authentic manifests
// the epoch meant.
func Hash(manifestFile []byte) [HashSize]byte { return sha256.Sum256(manifestFile) }
