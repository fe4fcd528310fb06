package meta

import (
	"crypto/cipher"
	"fmt"
	"io"
	"strings"

	"github.com/encryptfs/encryptfs/internal/crypto/siv"
)

// Xattrs encrypts xattr names (AES-SIV, bound to the object ID) and values
// (XChaCha20-Poly1305, bound to the object ID and encrypted name).
type Xattrs struct {
	names  *siv.SIV
	values cipher.AEAD
}

// NewXattrs takes the 64-byte xattr-name key and the 32-byte value key.
func NewXattrs(nameKey, valueKey []byte) (*Xattrs, error) {
	if len(nameKey) != 64 {
		return nil, fmt.Errorf("%w: xattr name key must be 64 bytes, got %d", ErrKeySize, len(nameKey))
	}
	names, err := siv.New(nameKey)
	if err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	values, err := newXChaCha(valueKey)
	if err != nil {
		return nil, err
	}
	return &Xattrs{names: names, values: values}, nil
}

// EncryptName maps "user.NAME" to XattrPrefix + base64url(SIV(objID, NAME)).
//
// Why deterministic SIV with AD = [objID] is safe: getxattr needs a stable
// backing name; equality only leaks for the same name on the same object, and
// equal names on different objects encrypt differently.
func (x *Xattrs) EncryptName(objID []byte, name string) (string, error) {
	if err := checkID(objID); err != nil {
		return "", err
	}
	plain, ok := strings.CutPrefix(name, userPrefix)
	if !ok || plain == "" {
		return "", fmt.Errorf("%w: %q", ErrNotUser, name)
	}
	if len(name) > MaxXattrName {
		return "", fmt.Errorf("%w: xattr name of %d bytes (max %d)", ErrTooLong, len(name), MaxXattrName)
	}
	sealed := x.names.Seal(nil, []byte(plain), objID)
	return XattrPrefix + encoding.EncodeToString(sealed), nil
}

// DecryptName reverses EncryptName, or ErrCorrupt. ok is false for backing
// names that are not ours (not XattrPrefix).
func (x *Xattrs) DecryptName(objID []byte, backing string) (name string, ok bool, err error) {
	enc, ok := strings.CutPrefix(backing, XattrPrefix)
	if !ok {
		return "", false, nil
	}
	if err := checkID(objID); err != nil {
		return "", true, err
	}
	if len(backing) > 255 {
		return "", true, fmt.Errorf("%w: backing xattr name too long", ErrCorrupt)
	}
	raw, err := encoding.DecodeString(enc)
	if err != nil || encoding.EncodeToString(raw) != enc {
		return "", true, fmt.Errorf("%w: xattr name is not canonical base64url", ErrCorrupt)
	}
	plain, err := x.names.Open(nil, raw, objID)
	if err != nil || len(plain) == 0 {
		return "", true, fmt.Errorf("%w: xattr name", ErrCorrupt)
	}
	return userPrefix + string(plain), true, nil
}

// SealValue encrypts a value bound to objID and the backing name.
//
// AD = objID(16) ‖ backing xattr name. Why this is safe: a value copied to
// another attribute or another file fails authentication.
func (x *Xattrs) SealValue(objID []byte, backingName string, value []byte, rand io.Reader) ([]byte, error) {
	if err := checkID(objID); err != nil {
		return nil, err
	}
	if len(value) > MaxXattrValue {
		return nil, fmt.Errorf("%w: xattr value of %d bytes (max %d)", ErrTooLong, len(value), MaxXattrValue)
	}
	return sealBlob(x.values, rand, value, objID, []byte(backingName))
}

// OpenValue authenticates and decrypts a value, or ErrCorrupt.
func (x *Xattrs) OpenValue(objID []byte, backingName string, blob []byte) ([]byte, error) {
	if err := checkID(objID); err != nil {
		return nil, err
	}
	plain, err := openBlob(x.values, blob, objID, []byte(backingName))
	if err != nil {
		return nil, err
	}
	if plain == nil {
		plain = []byte{}
	}
	return plain, nil
}
