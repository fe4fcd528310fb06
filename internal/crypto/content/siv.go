package content

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/crypto/siv"
)

// initSIV sets up AES-256-SIV (RFC 5297) for a 64-byte per-file key.
func (f *FileCipher) initSIV(key []byte) error {
	s, err := siv.New(key)
	if err != nil {
		return fmt.Errorf("content: %w", err)
	}
	f.siv = s
	return nil
}
