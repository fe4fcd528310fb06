package content

import "fmt"

// sivAEAD is the part of *siv.SIV the chunk code uses.
type sivAEAD interface {
	Seal(dst, plaintext []byte, ad ...[]byte) []byte
	Open(dst, ciphertext []byte, ad ...[]byte) ([]byte, error)
}

// initSIV sets up AES-256-SIV for a 64-byte per-file key.
func (f *FileCipher) initSIV(key []byte) error {
	return fmt.Errorf("%w: %s is not implemented yet", ErrUnsupported, AES256SIV)
}
