// Package meta encrypts symlink targets and extended attributes, each bound
// to the object it belongs to (docs/format.md, "Symlinks" and "xattrs").
package meta

import (
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/chacha20poly1305"
)

// Constants of the format.
const (
	XattrPrefix          = "user.e."         // backing xattr names
	SymlinkSidecarPrefix = "encryptfs.link." // long symlink targets
	LongSymlinkMarker    = "encryptfs.link"  // backing target when the blob is in a sidecar
	MaxBackingTarget     = 4095

	// IDSize is the size of a directory ID or file ID that blobs are bound to.
	IDSize = 16
	// BlobOverhead is nonce(24) + tag(16) of a symlink or xattr value blob.
	BlobOverhead = chacha20poly1305.NonceSizeX + chacha20poly1305.Overhead
	// MaxTarget is the longest plaintext symlink target (PATH_MAX - 1).
	MaxTarget = 4095
	// MaxInlineTarget is the longest target whose blob still fits in a
	// backing symlink; longer ones go to a sidecar.
	MaxInlineTarget = MaxBackingTarget*6/8 - BlobOverhead
	// MaxXattrName is the longest plaintext xattr name ("user." + NAME)
	// whose backing name fits in XATTR_NAME_MAX (255) bytes.
	MaxXattrName = len("user.") + (255-len(XattrPrefix))*6/8 - sivOverhead
	// MaxXattrValue is the longest plaintext value whose blob fits in
	// XATTR_SIZE_MAX (65536) bytes.
	MaxXattrValue = 65536 - BlobOverhead

	sivOverhead = 16
	userPrefix  = "user."
)

// Errors.
var (
	ErrCorrupt = errors.New("meta: symlink or xattr failed authentication")
	ErrTooLong = errors.New("meta: name or value too long")
	ErrNotUser = errors.New("meta: only user.* xattrs are supported")
	// ErrID reports an object or directory ID that is not IDSize bytes.
	ErrID = errors.New("meta: object ID must be 16 bytes")
	// ErrKeySize reports a key of the wrong size.
	ErrKeySize = errors.New("meta: wrong key size")
)

// encoding is strict base64url without padding, as for file names.
var encoding = base64.RawURLEncoding.Strict()

// sealBlob returns nonce(24) ‖ XChaCha20-Poly1305(key, ad, plain).
// Why random nonces are safe: 192-bit nonces collide with probability
// about q^2/2^193 for q blobs under one key, negligible for any vault.
func sealBlob(aead cipher.AEAD, rand io.Reader, plain []byte, ad ...[]byte) ([]byte, error) {
	blob := make([]byte, chacha20poly1305.NonceSizeX, BlobOverhead+len(plain))
	if _, err := io.ReadFull(rand, blob); err != nil {
		return nil, fmt.Errorf("meta: read nonce: %w", err)
	}
	return aead.Seal(blob, blob, plain, joinAD(ad...)), nil
}

// openBlob authenticates and decrypts a blob, or returns ErrCorrupt.
func openBlob(aead cipher.AEAD, blob []byte, ad ...[]byte) ([]byte, error) {
	if len(blob) < BlobOverhead {
		return nil, fmt.Errorf("%w: blob of %d bytes", ErrCorrupt, len(blob))
	}
	n := chacha20poly1305.NonceSizeX
	plain, err := aead.Open(nil, blob[:n], blob[n:], joinAD(ad...))
	if err != nil {
		return nil, ErrCorrupt
	}
	return plain, nil
}

// joinAD concatenates associated-data parts. Callers put fixed-size parts
// first and at most one variable-size part last, so the split is unambiguous.
func joinAD(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	ad := make([]byte, 0, n)
	for _, p := range parts {
		ad = append(ad, p...)
	}
	return ad
}

// newXChaCha checks a 32-byte key and returns XChaCha20-Poly1305.
func newXChaCha(key []byte) (cipher.AEAD, error) {
	if len(key) != chacha20poly1305.KeySize {
		return nil, fmt.Errorf("%w: want 32 bytes, got %d", ErrKeySize, len(key))
	}
	return chacha20poly1305.NewX(key)
}

// checkID checks the size of a directory or object ID.
func checkID(id []byte) error {
	if len(id) != IDSize {
		return fmt.Errorf("%w (got %d)", ErrID, len(id))
	}
	return nil
}

// sidecarHash returns base64url-nopad(SHA-256(s)).
func sidecarHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return encoding.EncodeToString(sum[:])
}
