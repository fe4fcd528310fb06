// Package keys derives the vault's subkeys from the master key with
// HKDF-SHA256, one distinct label per purpose (docs/format.md, "Keys").
package keys

// MasterKeySize is the size of the random master key.
const MasterKeySize = 32

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
func Derive(master []byte) (*Keys, error) { panic("TODO") }

// Wipe overwrites every subkey with zeros.
func (k *Keys) Wipe() { panic("TODO") }
