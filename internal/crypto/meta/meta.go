// Package meta encrypts symlink targets and extended attributes, each bound
// to the object it belongs to (docs/format.md, "Symlinks" and "xattrs").
package meta

import (
	"errors"
	"io"
)

// Constants of the format.
const (
	XattrPrefix          = "user.e."         // backing xattr names
	SymlinkSidecarPrefix = "encryptfs.link." // long symlink targets
	LongSymlinkMarker    = "encryptfs.link"  // backing target when the blob is in a sidecar
	MaxBackingTarget     = 4095
)

// Errors.
var (
	ErrCorrupt = errors.New("meta: symlink or xattr failed authentication")
	ErrTooLong = errors.New("meta: name or value too long")
	ErrNotUser = errors.New("meta: only user.* xattrs are supported")
)

// Symlinks seals symlink targets, bound to the directory ID and plaintext name.
type Symlinks struct{ _ int }

// NewSymlinks takes the 32-byte symlink key.
func NewSymlinks(key []byte) (*Symlinks, error) { panic("TODO") }

// Seal returns the blob nonce(24) ‖ ciphertext ‖ tag.
func (s *Symlinks) Seal(dirID []byte, name, target string, rand io.Reader) ([]byte, error) {
	panic("TODO")
}

// Open authenticates a blob, or ErrCorrupt.
func (s *Symlinks) Open(dirID []byte, name string, blob []byte) (string, error) { panic("TODO") }

// EncodeTarget returns the backing symlink target for a blob, and whether the
// blob must go into a sidecar instead (then the target is LongSymlinkMarker).
func EncodeTarget(blob []byte) (target string, sidecar bool) { panic("TODO") }

// DecodeTarget decodes a backing symlink target (not the marker) into a blob.
func DecodeTarget(target string) ([]byte, error) { panic("TODO") }

// SymlinkSidecarName names the sidecar that holds a long target's blob.
func SymlinkSidecarName(backingName string) string { panic("TODO") }

// Xattrs encrypts xattr names (AES-SIV, bound to the object ID) and values
// (XChaCha20-Poly1305, bound to the object ID and encrypted name).
type Xattrs struct{ _ int }

// NewXattrs takes the 64-byte xattr-name key and the 32-byte value key.
func NewXattrs(nameKey, valueKey []byte) (*Xattrs, error) { panic("TODO") }

// EncryptName maps "user.NAME" to XattrPrefix + base64url(SIV(objID, NAME)).
func (x *Xattrs) EncryptName(objID []byte, name string) (string, error) { panic("TODO") }

// DecryptName reverses EncryptName, or ErrCorrupt. ok is false for backing
// names that are not ours (not XattrPrefix).
func (x *Xattrs) DecryptName(objID []byte, backing string) (name string, ok bool, err error) {
	panic("TODO")
}

// SealValue encrypts a value bound to objID and the backing name.
func (x *Xattrs) SealValue(objID []byte, backingName string, value []byte, rand io.Reader) ([]byte, error) {
	panic("TODO")
}

// OpenValue authenticates and decrypts a value, or ErrCorrupt.
func (x *Xattrs) OpenValue(objID []byte, backingName string, blob []byte) ([]byte, error) {
	panic("TODO")
}
