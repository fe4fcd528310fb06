// Package names encrypts file names with AES-SIV, keyed per vault and bound
// to the parent directory's random ID, and handles the long-name scheme and
// the reserved backing names (docs/format.md, "Names").
package names

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/encryptfs/encryptfs/internal/crypto/siv"
)

// Reserved backing names and prefixes.
const (
	ConfigFile     = "encryptfs.conf"
	DirIDFile      = "encryptfs.dirid"
	DirIDSize      = 16
	LongNamePrefix = "encryptfs.long."
	LongNameSuffix = ".name" // sidecar: LongNamePrefix + H + LongNameSuffix
	MaxNameLen     = 255     // plaintext bytes
	MaxBackingLen  = 255     // backing name bytes

	// ReservedPrefix starts every name EncryptFS itself creates in a backing
	// directory. Encrypted names never contain '.', so they cannot collide.
	ReservedPrefix = "encryptfs."
	// TempPrefix starts temporary backing names (atomic replace of config,
	// dirid, sidecars, symlink re-encryption); see TempName.
	TempPrefix = "encryptfs.tmp."

	// KeySize is the size of the names key (AES-SIV-512: two AES-256 keys).
	KeySize = 64
	// PadBlock is the granularity names are padded to before encryption, so
	// that backing names reveal a name's length only to within 16 bytes.
	PadBlock = 16
	// MaxLongNameLen is the length of the longest possible encoded name: a
	// 255-byte plaintext padded to 256 plus the 16-byte SIV, in base64url
	// without padding.
	MaxLongNameLen = ((siv.Overhead+paddedMax)*8 + 5) / 6
	// MaxShortNameLen is the longest plaintext whose encoded name still fits
	// in a backing name: 159 bytes pad to 160, +16 SIV = 176 bytes, 235
	// characters; 160 bytes pad to 176 and would need 256.
	MaxShortNameLen = (MaxBackingLen*3/4-siv.Overhead)/PadBlock*PadBlock - 1

	paddedMax = (MaxNameLen/PadBlock + 1) * PadBlock
)

// Errors.
var (
	ErrInvalidName = errors.New("names: invalid file name")
	ErrNameTooLong = errors.New("names: file name too long")
	ErrBadName     = errors.New("names: encrypted name is corrupt or forged")
	// ErrDirID reports a directory ID that is not DirIDSize bytes.
	ErrDirID = errors.New("names: directory ID must be 16 bytes")
	// ErrKeySize reports a names key that is not KeySize bytes.
	ErrKeySize = errors.New("names: key must be 64 bytes")
)

// encoding is base64url without padding, strict: its alphabet has no '.',
// ' ' or '~', which keeps encrypted names out of the reserved and foreign
// namespaces, and Strict rejects non-zero trailing bits.
var encoding = base64.RawURLEncoding.Strict()

// Cipher encrypts and decrypts names. Safe for concurrent use.
type Cipher struct{ siv *siv.SIV }

// New takes the 64-byte names key.
func New(key []byte) (*Cipher, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("%w (got %d)", ErrKeySize, len(key))
	}
	s, err := siv.New(key)
	if err != nil {
		return nil, fmt.Errorf("names: %w", err)
	}
	return &Cipher{siv: s}, nil
}

// Validate checks a plaintext name: 1..255 bytes, no '/', no NUL, not . or ..
func Validate(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %d bytes (max %d)", ErrNameTooLong, len(name), MaxNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("%w: contains '/' or NUL", ErrInvalidName)
	}
	return nil
}

// Encrypt returns the encoded encrypted name (base64url, no padding), which may
// be longer than MaxBackingLen; see Backing.
//
// Why deterministic encryption is safe here: lookups need the same name to map
// to the same backing name, and SIV only reveals equality of (dirID, name)
// pairs; AD = [dirID] with a random ID per directory hides equal names in
// different directories and makes a name moved to another directory fail.
func (c *Cipher) Encrypt(dirID []byte, name string) (string, error) {
	if err := Validate(name); err != nil {
		return "", err
	}
	if len(dirID) != DirIDSize {
		return "", fmt.Errorf("%w (got %d)", ErrDirID, len(dirID))
	}
	padded := pad([]byte(name))
	sealed := c.siv.Seal(make([]byte, 0, siv.Overhead+len(padded)), padded, dirID)
	return encoding.EncodeToString(sealed), nil
}

// Decrypt decodes strictly and authenticates an encoded name, or ErrBadName.
// The encoding must re-encode to exactly encName, so every plaintext name has
// exactly one backing name.
func (c *Cipher) Decrypt(dirID []byte, encName string) (string, error) {
	if len(dirID) != DirIDSize {
		return "", fmt.Errorf("%w (got %d)", ErrDirID, len(dirID))
	}
	if len(encName) > MaxLongNameLen {
		return "", fmt.Errorf("%w: %d characters is longer than any encrypted name", ErrBadName, len(encName))
	}
	raw, err := encoding.DecodeString(encName)
	if err != nil || encoding.EncodeToString(raw) != encName {
		return "", fmt.Errorf("%w: not canonical base64url", ErrBadName)
	}
	if len(raw) < siv.Overhead+PadBlock || (len(raw)-siv.Overhead)%PadBlock != 0 {
		return "", fmt.Errorf("%w: impossible length", ErrBadName)
	}
	plain, err := c.siv.Open(raw[siv.Overhead:siv.Overhead], raw, dirID)
	if err != nil {
		return "", fmt.Errorf("%w: authentication failed", ErrBadName)
	}
	// The padding is checked only after authentication, so there is no
	// padding oracle: a forged name never reaches unpad.
	unpadded, ok := unpad(plain)
	if !ok {
		return "", fmt.Errorf("%w: bad padding", ErrBadName)
	}
	name := string(unpadded)
	if err := Validate(name); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadName, err)
	}
	return name, nil
}

// TempName returns a reserved temporary backing name built from random bytes
// supplied by the caller (who owns the randomness source).
func TempName(random []byte) string {
	return TempPrefix + encoding.EncodeToString(random)
}

// IsReserved reports whether a backing name belongs to EncryptFS's own
// namespace (config, dirid, sidecars, temp files) and must never be listed.
// Everything EncryptFS creates besides encrypted names starts with
// ReservedPrefix, and encrypted names never contain '.'.
func IsReserved(backing string) bool {
	return strings.HasPrefix(backing, ReservedPrefix)
}

// pad appends PKCS#7 padding up to the next multiple of PadBlock (always at
// least one byte, so unpad is unambiguous).
func pad(name []byte) []byte {
	n := PadBlock - len(name)%PadBlock
	out := make([]byte, len(name), len(name)+n)
	copy(out, name)
	for i := 0; i < n; i++ {
		out = append(out, byte(n))
	}
	return out
}

// unpad removes and checks PKCS#7 padding.
func unpad(b []byte) ([]byte, bool) {
	if len(b) == 0 || len(b)%PadBlock != 0 {
		return nil, false
	}
	n := int(b[len(b)-1])
	if n < 1 || n > PadBlock {
		return nil, false
	}
	for _, c := range b[len(b)-n:] {
		if int(c) != n {
			return nil, false
		}
	}
	return b[:len(b)-n], true
}
