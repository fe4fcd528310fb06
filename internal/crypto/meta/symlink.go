package meta

import (
	"crypto/cipher"
	"fmt"
	"io"
)

// symlinkADLabel starts a symlink blob's associated data; it separates the
// domain from xattr values, which use other keys anyway.
const symlinkADLabel = "symlink"

// Symlinks seals symlink targets, bound to the directory ID and plaintext name.
type Symlinks struct{ aead cipher.AEAD }

// NewSymlinks takes the 32-byte symlink key.
func NewSymlinks(key []byte) (*Symlinks, error) {
	aead, err := newXChaCha(key)
	if err != nil {
		return nil, err
	}
	return &Symlinks{aead: aead}, nil
}

// Seal returns the blob nonce(24) ‖ ciphertext ‖ tag.
//
// AD = "symlink" ‖ dirID(16) ‖ plaintext name. Why this is safe: the blob only
// opens as the target of that name in that directory, so moving or swapping
// targets between links is detected (a rename re-encrypts the target).
func (s *Symlinks) Seal(dirID []byte, name, target string, rand io.Reader) ([]byte, error) {
	if err := checkID(dirID); err != nil {
		return nil, err
	}
	if len(target) > MaxTarget {
		return nil, fmt.Errorf("%w: symlink target of %d bytes", ErrTooLong, len(target))
	}
	return sealBlob(s.aead, rand, []byte(target), []byte(symlinkADLabel), dirID, []byte(name))
}

// Open authenticates a blob, or ErrCorrupt.
func (s *Symlinks) Open(dirID []byte, name string, blob []byte) (string, error) {
	if err := checkID(dirID); err != nil {
		return "", err
	}
	if len(blob) > BlobOverhead+MaxTarget {
		return "", fmt.Errorf("%w: blob of %d bytes", ErrCorrupt, len(blob))
	}
	plain, err := openBlob(s.aead, blob, []byte(symlinkADLabel), dirID, []byte(name))
	if err != nil {
		return "", err
	}
	return string(plain), nil
}

// EncodeTarget returns the backing symlink target for a blob, and whether the
// blob must go into a sidecar instead (then the target is LongSymlinkMarker).
func EncodeTarget(blob []byte) (target string, sidecar bool) {
	if encoding.EncodedLen(len(blob)) > MaxBackingTarget {
		return LongSymlinkMarker, true
	}
	return encoding.EncodeToString(blob), false
}

// DecodeTarget decodes a backing symlink target (not the marker) into a blob.
// Decoding is strict and must re-encode to the same string; anything else is
// ErrCorrupt.
func DecodeTarget(target string) ([]byte, error) {
	if target == LongSymlinkMarker {
		return nil, fmt.Errorf("%w: the long-target marker has no inline blob", ErrCorrupt)
	}
	if len(target) > MaxBackingTarget {
		return nil, fmt.Errorf("%w: backing target of %d bytes", ErrCorrupt, len(target))
	}
	blob, err := encoding.DecodeString(target)
	if err != nil || encoding.EncodeToString(blob) != target {
		return nil, fmt.Errorf("%w: backing target is not canonical base64url", ErrCorrupt)
	}
	return blob, nil
}

// SymlinkSidecarName names the sidecar that holds a long target's blob:
// SymlinkSidecarPrefix + base64url(SHA-256(backingName)), where backingName
// is the symlink's own backing name (short or long form).
func SymlinkSidecarName(backingName string) string {
	return SymlinkSidecarPrefix + sidecarHash(backingName)
}

// TargetLen returns the plaintext length of the target stored in a backing
// symlink whose own target is backingLen bytes long (not the marker), or
// ErrCorrupt for a length no blob encodes to. It lets a stat report a
// symlink's size without reading the link (a read would move its atime);
// the length is unauthenticated, as any backing size is, and the target
// itself is authenticated when it is read.
func TargetLen(backingLen int64) (int64, error) {
	if backingLen%4 == 1 || backingLen > MaxBackingTarget {
		return 0, fmt.Errorf("%w: backing target of %d bytes", ErrCorrupt, backingLen)
	}
	return BlobTargetLen(backingLen * 6 / 8)
}

// BlobTargetLen returns the plaintext length of the target in a blob of
// blobLen bytes (a long target's sidecar), or ErrCorrupt.
func BlobTargetLen(blobLen int64) (int64, error) {
	if blobLen < BlobOverhead || blobLen > BlobOverhead+MaxTarget {
		return 0, fmt.Errorf("%w: blob of %d bytes", ErrCorrupt, blobLen)
	}
	return blobLen - BlobOverhead, nil
}
