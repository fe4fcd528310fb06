package content

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/buf"
	"github.com/encryptfs/encryptfs/internal/crypto/siv"
	"golang.org/x/crypto/chacha20poly1305"
)

// adSize is the associated data of a chunk: fileID(16) ‖ index(8) ‖ final(1).
const adSize = FileIDSize + 8 + 1

// File returns the per-file cipher, keyed by HKDF(contents key, fileID).
//
// Per-file key = HKDF-SHA256(secret = contents key, salt = fileID,
// info = FileKeyInfoPrefix + algorithm). Why this is safe: every file gets an
// independent key, so nonce-collision bounds count only one file's chunks,
// a chunk moved to another file fails under the wrong key, and the algorithm
// in the label keeps one key from ever serving two AEADs.
func (s *Suite) File(id FileID) (*FileCipher, error) { return s.FileOf(Header{FileID: id}) }

// FileOf is File for the file whose header is h: the contents key is that
// of h's epoch (epoch.go; 0 in v1).
func (s *Suite) FileOf(h Header) (*FileCipher, error) {
	id := h.FileID
	s.keyMu.RLock()
	if s.wiped {
		s.keyMu.RUnlock()
		return nil, ErrWiped
	}
	contentsKey, _ := s.keysOf(h.Epoch)
	if contentsKey == nil {
		s.keyMu.RUnlock()
		return nil, fmt.Errorf("%w: epoch %d", ErrUnknownEpoch, h.Epoch)
	}
	key, err := hkdf.Key(sha256.New, contentsKey, id[:], FileKeyInfoPrefix+string(s.alg), s.fileKeySize)
	s.keyMu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("content: derive file key: %w", err)
	}
	defer clear(key) // the ciphers below keep their own expanded copies
	f := &FileCipher{alg: s.alg, id: id, nonceSize: s.nonceSize, chunkSize: s.chunkSize}
	f.adPool.New = func() any { return new([adSize]byte) }
	switch s.alg {
	case AES256GCM:
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
		// Why a 16-byte nonce with GCM is safe: GCM hashes non-96-bit nonces
		// with GHASH into the initial counter; collisions of that counter are
		// bounded like random 128-bit values (see docs/format-crypto-notes.md).
		f.aead, err = cipher.NewGCMWithNonceSize(block, s.nonceSize)
		if err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
	case XChaCha20Poly1305:
		f.aead, err = chacha20poly1305.NewX(key)
		if err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
	case AES256SIV:
		if err := f.initSIV(key); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: algorithm %q", ErrUnsupported, s.alg)
	}
	return f, nil
}

// FileCipher seals and opens the chunks of one file. Safe for concurrent use.
type FileCipher struct {
	alg       Algorithm
	id        FileID
	nonceSize int
	chunkSize int
	aead      cipher.AEAD // AES-GCM or XChaCha20-Poly1305
	siv       *siv.SIV    // AES-SIV (concrete type: no escaping AD)
	// adPool recycles associated-data buffers: a stack array passed to the
	// cipher.AEAD interface would escape to the heap on every call.
	adPool sync.Pool
}

// FileID returns the file ID the cipher is bound to.
func (f *FileCipher) FileID() FileID { return f.id }

// NonceSize is the size of the stored per-chunk nonce.
func (f *FileCipher) NonceSize() int { return f.nonceSize }

// Overhead is the stored size minus the plaintext size of one chunk.
func (f *FileCipher) Overhead() int { return f.nonceSize + TagSize }

// associatedData fills ad with fileID ‖ uint64 BE index ‖ final.
// Why this is safe: the AD makes a chunk valid only at its own index (no
// reordering), in its own file, and with the right end-of-file status (no
// truncation at a chunk boundary, no appended stale chunk).
func (f *FileCipher) associatedData(ad *[adSize]byte, index uint64, final bool) {
	copy(ad[:FileIDSize], f.id[:])
	binary.BigEndian.PutUint64(ad[FileIDSize:], index)
	ad[adSize-1] = 0
	if final {
		ad[adSize-1] = 1
	}
}

// Seal appends the stored chunk nonce ‖ ciphertext ‖ tag to dst. nonce must be
// NonceSize bytes (random in forward mode; derived in reverse mode, SIV only).
// len(plain) is 1..ChunkSize. plain must not overlap the bytes appended to
// dst. Seal does not allocate when dst has enough spare capacity
// (aes-256-siv: one small allocation, see package siv).
// Wrong sizes are programmer errors and panic.
func (f *FileCipher) Seal(dst, plain []byte, index uint64, final bool, nonce []byte) []byte {
	if len(nonce) != f.nonceSize {
		panic(fmt.Sprintf("content: nonce is %d bytes, want %d", len(nonce), f.nonceSize))
	}
	if len(plain) == 0 || len(plain) > f.chunkSize {
		panic(fmt.Sprintf("content: chunk plaintext is %d bytes, want 1..%d", len(plain), f.chunkSize))
	}
	ad := f.adPool.Get().(*[adSize]byte)
	defer f.adPool.Put(ad)
	f.associatedData(ad, index, final)

	ret, out := buf.SliceForAppend(dst, f.nonceSize+len(plain)+TagSize)
	copy(out, nonce)
	storedNonce := out[:f.nonceSize]
	if f.aead != nil {
		f.aead.Seal(out[f.nonceSize:f.nonceSize], storedNonce, plain, ad[:])
	} else {
		// RFC 5297 nonce-based use: the nonce is the last AD component.
		f.siv.Seal(out[f.nonceSize:f.nonceSize], plain, ad[:], storedNonce)
	}
	return ret
}

// Open authenticates a stored chunk and appends its plaintext to dst, or
// returns an error wrapping ErrCorruptChunk and appends nothing. Open does not
// allocate on success when dst has enough spare capacity (aes-256-siv: one
// small allocation, see package siv). dst's spare capacity must not overlap
// chunk: in-place layouts differ between the algorithms.
func (f *FileCipher) Open(dst, chunk []byte, index uint64, final bool) ([]byte, error) {
	n := len(chunk) - f.Overhead()
	if n <= 0 || n > f.chunkSize {
		return dst, fmt.Errorf("%w: chunk %d has impossible size %d", ErrCorruptChunk, index, len(chunk))
	}
	ad := f.adPool.Get().(*[adSize]byte)
	defer f.adPool.Put(ad)
	f.associatedData(ad, index, final)

	nonce, body := chunk[:f.nonceSize], chunk[f.nonceSize:]
	var out []byte
	var err error
	if f.aead != nil {
		out, err = f.aead.Open(dst, nonce, body, ad[:])
	} else {
		out, err = f.siv.Open(dst, body, ad[:], nonce)
	}
	if err != nil {
		return dst, fmt.Errorf("%w: chunk %d", ErrCorruptChunk, index)
	}
	return out, nil
}
