// Package names encrypts file names with AES-SIV, keyed per vault and bound
// to the parent directory's random ID, and handles the long-name scheme and
// the reserved backing names (docs/format.md, "Names").
package names

import "errors"

// Reserved backing names and prefixes.
const (
	ConfigFile     = "encryptfs.conf"
	DirIDFile      = "encryptfs.dirid"
	DirIDSize      = 16
	LongNamePrefix = "encryptfs.long."
	LongNameSuffix = ".name" // sidecar: LongNamePrefix + H + LongNameSuffix
	MaxNameLen     = 255     // plaintext bytes
	MaxBackingLen  = 255     // backing name bytes
)

// Errors.
var (
	ErrInvalidName = errors.New("names: invalid file name")
	ErrNameTooLong = errors.New("names: file name too long")
	ErrBadName     = errors.New("names: encrypted name is corrupt or forged")
)

// Cipher encrypts and decrypts names. Safe for concurrent use.
type Cipher struct{ _ int }

// New takes the 64-byte names key.
func New(key []byte) (*Cipher, error) { panic("TODO") }

// Validate checks a plaintext name: 1..255 bytes, no '/', no NUL, not . or ..
func Validate(name string) error { panic("TODO") }

// Encrypt returns the encoded encrypted name (base64url, no padding), which may
// be longer than MaxBackingLen; see Backing.
func (c *Cipher) Encrypt(dirID []byte, name string) (string, error) { panic("TODO") }

// Decrypt decodes strictly and authenticates an encoded name, or ErrBadName.
func (c *Cipher) Decrypt(dirID []byte, encName string) (string, error) { panic("TODO") }

// Backing maps an encoded name to the name stored in the backing directory:
// itself when short enough, else LongNamePrefix + base64url(SHA-256(encName)).
func Backing(encName string) (backing string, long bool) { panic("TODO") }

// IsLongName reports whether a backing name is a long-name entry (not a sidecar).
func IsLongName(backing string) bool { panic("TODO") }

// SidecarName returns the sidecar file name for a long-name entry.
func SidecarName(longBacking string) string { panic("TODO") }

// CheckSidecar verifies that a sidecar's content hashes to the long name,
// returning the encoded name, or ErrBadName.
func CheckSidecar(longBacking string, content []byte) (string, error) { panic("TODO") }

// IsReserved reports whether a backing name belongs to EncryptFS's own
// namespace (config, dirid, sidecars, temp files) and must never be listed.
func IsReserved(backing string) bool { panic("TODO") }
