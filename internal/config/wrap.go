package config

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

// Key-wrap constants (docs/format.md §3).
const (
	// wrapLabel separates the wrap key from the KEK itself and from any
	// other use of the password-derived key.
	wrapLabel = "encryptfs v1 config key wrap"
	// adPrefix names the structure being authenticated; the NUL ends the
	// prefix so that no Params value can be confused with part of it.
	adPrefix = "encryptfs.conf v1\x00"
	// wrapNonceSize: a 12-byte random nonce is safe because each wrap key
	// (fresh salt, hence fresh KEK, per password change) seals once,
	// far below GCM's 2^32 random-nonce bound.
	wrapNonceSize = 12
	wrapTagSize   = 16
	// EncryptedKeySize is the stored size of the wrapped master key.
	EncryptedKeySize = wrapNonceSize + keys.MasterKeySize + wrapTagSize
)

// wrapAEAD derives the wrap key from password and the config's KDF params.
func (c *Config) wrapAEAD(password []byte) (cipher.AEAD, error) {
	if err := c.CheckKDFMemory(c.Params.KDF.MemoryKiB); err != nil {
		return nil, err
	}
	kek, err := c.Params.KDF.Key(password)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	defer clear(kek)
	// Why HKDF here: the KEK is uniformly random given the password, and the
	// label binds the derived key to this one purpose.
	wk, err := hkdf.Key(sha256.New, kek, nil, wrapLabel, 32)
	if err != nil {
		return nil, fmt.Errorf("config: derive wrap key: %w", err)
	}
	defer clear(wk)
	block, err := aes.NewCipher(wk)
	if err != nil {
		return nil, fmt.Errorf("config: wrap cipher: %w", err)
	}
	return cipher.NewGCM(block)
}

// CheckKDFMemory returns ErrKDFMemory if an Argon2id memory cost of
// memoryKiB is above the limit set with LimitKDFMemory. Unlock and Rewrap
// check it themselves; it is exported for callers that want to refuse
// before asking for a password, or that unlock through another path
// (vault.Open).
func (c *Config) CheckKDFMemory(memoryKiB uint32) error {
	if m := uint64(memoryKiB); c.maxKDFMemoryKiB != 0 && m > c.maxKDFMemoryKiB {
		return fmt.Errorf("%w: an Argon2id memory cost of %d MiB is more than the %d MiB available here; refused before running Argon2id",
			ErrKDFMemory, m/1024, c.maxKDFMemoryKiB/1024)
	}
	return nil
}

// associatedData is adPrefix ‖ the exact stored Params bytes: any edit of any
// parameter (even whitespace) makes the unwrap fail.
func (c *Config) associatedData() []byte {
	ad := make([]byte, 0, len(adPrefix)+len(c.rawParams))
	ad = append(ad, adPrefix...)
	return append(ad, c.rawParams...)
}

// wrap seals masterKey under password into c.EncryptedKey.
func (c *Config) wrap(masterKey, password []byte, rand io.Reader) error {
	aead, err := c.wrapAEAD(password)
	if err != nil {
		return err
	}
	nonce := make([]byte, wrapNonceSize, EncryptedKeySize)
	if _, err := io.ReadFull(rand, nonce); err != nil {
		return fmt.Errorf("config: reading random nonce: %w", err)
	}
	c.EncryptedKey = aead.Seal(nonce, nonce, masterKey, c.associatedData())
	return nil
}

// unwrap opens c.EncryptedKey, or returns ErrWrongPassword.
func (c *Config) unwrap(password []byte) ([]byte, error) {
	if len(c.EncryptedKey) != EncryptedKeySize {
		return nil, fmt.Errorf("%w: EncryptedKey is %d bytes, want %d", ErrCorrupt, len(c.EncryptedKey), EncryptedKeySize)
	}
	if len(c.rawParams) == 0 {
		return nil, fmt.Errorf("%w: config has no stored Params", ErrCorrupt)
	}
	aead, err := c.wrapAEAD(password)
	if err != nil {
		return nil, err
	}
	nonce, sealed := c.EncryptedKey[:wrapNonceSize], c.EncryptedKey[wrapNonceSize:]
	master, err := aead.Open(nil, nonce, sealed, c.associatedData())
	if err != nil {
		// The file parsed and every parameter is in bounds, so the likely
		// cause is the password; an edited Params looks the same (documented).
		return nil, ErrWrongPassword
	}
	return master, nil
}
