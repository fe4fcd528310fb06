// Package content encrypts file contents: the 36-byte file header and
// fixed-size chunks sealed with an AEAD whose associated data binds each chunk
// to its file, its index and whether it is the file's last chunk
// (docs/format.md, "File contents").
//
// It holds no file state and does no I/O: the engine in internal/fileengine does.
package content

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/internal/macpool"
)

// Algorithm names a chunk AEAD. The strings are stored in the config.
type Algorithm string

// The chunk ciphers of format version 1.
const (
	AES256GCM         Algorithm = "aes-256-gcm"
	XChaCha20Poly1305 Algorithm = "xchacha20-poly1305"
	AES256SIV         Algorithm = "aes-256-siv"
)

// Format constants.
const (
	Version    = 1
	HeaderSize = 36 // version(2) flags(2) fileID(16) mac(16)
	FileIDSize = 16
	FlagSparse = 0x0001
	MinChunk   = 4 << 10
	MaxChunk   = 1 << 20
	// DefaultChunkSize: 16 KiB. Measured with the engine (internal/fileengine
	// benchmarks, docs/format.md §12): sequential 128 KiB-request I/O is
	// level from 8 to 32 KiB, while 64 KiB chunks pay one extra seal per two
	// new chunks on appends (the final-flag re-seal) and a random 4 KiB read
	// costs ~37 µs at 64 KiB against ~7 µs at 16 KiB. Overhead is 0.2%.
	DefaultChunkSize = 16 << 10

	// KnownFlags are the header flags format version 1 understands; any
	// other bit set makes ParseHeader fail.
	KnownFlags = FlagSparse

	// TagSize is the authentication tag (or SIV) size of every algorithm.
	TagSize = 16

	// FileKeyInfoPrefix is the HKDF info prefix of per-file keys; the
	// algorithm name is appended so a key is never shared by two AEADs.
	FileKeyInfoPrefix = "encryptfs v1 file key "
)

// Errors. Callers match them with errors.Is.
var (
	ErrBadHeader    = errors.New("content: file header is corrupt or forged")
	ErrCorruptChunk = errors.New("content: chunk failed authentication")
	ErrTruncated    = errors.New("content: ciphertext size is impossible (truncated file)")
	ErrUnsupported  = errors.New("content: unsupported cipher or chunk size")
	// ErrWiped is returned by a Suite whose keys were wiped.
	ErrWiped = errors.New("content: keys were wiped")
)

// FileID is a file's random 128-bit identity.
type FileID [FileIDSize]byte

// Header is the decoded file header.
type Header struct {
	Flags  uint16
	FileID FileID
	// Size, Gen and Root are a roots suite's (roots.go): the plaintext
	// size, the generation (incremented by every header write of the
	// roots engine) and the root of the file's tag blocks. Zero otherwise.
	Size, Gen uint64
	Root      [RootSize]byte
	// Bindings are the location bindings of a v2 header (header_v2.go);
	// always empty in v1. Empty slots are zero.
	Bindings [BindingSlots]bind.Binding
	// Epoch is the master-key epoch whose keys the file's header MAC and
	// file key come from (v2 only, epoch.go); always 0 in v1.
	Epoch uint32
}

// Suite is the vault-wide content cipher: algorithm, chunk size and keys.
// It is safe for concurrent use.
type Suite struct {
	alg         Algorithm
	chunkSize   int
	nonceSize   int
	fileKeySize int

	// keyMu guards the keys against Wipe: File and the header MAC read
	// them under the read lock (once per file open or header write).
	keyMu        sync.RWMutex
	wiped        bool
	bound        bool   // v2 headers with location bindings (NewBoundSuite)
	roots        bool   // tag blocks and file roots (NewRootsSuite, roots.go)
	compact      bool   // tag block 0 in pieces after chunks 0 and 15 (roots_compact.go)
	trimmed      bool   // roots with trimmed leaves, TRIMMED headers (roots_trimmed.go)
	contentsKey  []byte // the key every per-file key is derived from
	headerMACKey []byte
	epochs       epochKeys // the keys of epochs 1.., v2 only (epoch.go)
	// headerMACs[e] keeps states keyed with epoch e's header MAC key (a
	// header MAC per header written or read, a root per file closed):
	// internal/crypto/internal/macpool. Dropped at Wipe.
	headerMACs []*macpool.Pool
}

// Algorithms lists the chunk ciphers of format version 1, default first.
func Algorithms() []Algorithm {
	return []Algorithm{AES256GCM, XChaCha20Poly1305, AES256SIV}
}

// params returns the stored nonce size and per-file key size of alg.
func params(alg Algorithm) (nonceSize, keySize int, ok bool) {
	switch alg {
	case AES256GCM:
		// Why 16 bytes: random 128-bit nonces make collisions negligible
		// (q^2/2^129 per file key) where 96-bit ones would bound a key to
		// about 2^32 chunks.
		return 16, 32, true
	case XChaCha20Poly1305:
		// Why safe: 192-bit random nonces, collision bound q^2/2^193.
		return 24, 32, true
	case AES256SIV:
		// Why 16 bytes: the nonce is one S2V input; SIV stays secure (only
		// equality leaks) even if it repeats, so random or derived both work.
		return 16, 64, true
	}
	return 0, 0, false
}

// NewSuite checks the algorithm and chunk size (power of two, MinChunk..MaxChunk)
// and keeps copies of the contents key and the header MAC key.
func NewSuite(alg Algorithm, chunkSize int, contentsKey, headerMACKey []byte) (*Suite, error) {
	ns, ks, ok := params(alg)
	if !ok {
		return nil, fmt.Errorf("%w: algorithm %q", ErrUnsupported, alg)
	}
	if chunkSize < MinChunk || chunkSize > MaxChunk || chunkSize&(chunkSize-1) != 0 {
		return nil, fmt.Errorf("%w: chunk size %d (want a power of two in %d..%d)", ErrUnsupported, chunkSize, MinChunk, MaxChunk)
	}
	if len(contentsKey) != 32 || len(headerMACKey) != 32 {
		return nil, fmt.Errorf("%w: contents and header MAC keys must be 32 bytes", ErrUnsupported)
	}
	mk := append([]byte(nil), headerMACKey...)
	return &Suite{
		alg:          alg,
		chunkSize:    chunkSize,
		nonceSize:    ns,
		fileKeySize:  ks,
		contentsKey:  append([]byte(nil), contentsKey...),
		headerMACKey: mk,
		headerMACs:   []*macpool.Pool{macpool.New(mk)},
	}, nil
}

// Wipe overwrites the suite's copies of the contents key (from which every
// per-file key is derived) and the header MAC key; they are the only key
// copies the package keeps (a per-file key is cleared as soon as its cipher
// is built). Afterwards File fails with ErrWiped, ParseHeader with
// ErrBadHeader, and MarshalHeader panics: a header sealed with a wiped key
// would make its file unreadable. FileCiphers already built keep working:
// their key schedules live inside the standard library's ciphers, out of
// reach, until garbage collected. Call Wipe after the last use (unmount).
func (s *Suite) Wipe() {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	for _, p := range s.headerMACs {
		p.Drop()
	}
	clear(s.contentsKey)
	clear(s.headerMACKey)
	s.epochs.wipe()
	s.wiped = true
}

// MaxPlainSize is the largest whole number of chunks whose backing file
// size (CipherSize) fits in an int64 (about 2^63 - 2^56 bytes). Larger files are
// refused (by the engine, with an error the FUSE layer reports as EFBIG)
// instead of letting a backing offset overflow.
func (s *Suite) MaxPlainSize() int64 {
	if s.roots {
		return s.maxPlainSizeRoots()
	}
	chunks := (math.MaxInt64 - int64(s.HeaderSize())) / int64(s.CipherChunkSize())
	return chunks * int64(s.chunkSize)
}

// Algorithm returns the chunk cipher.
func (s *Suite) Algorithm() Algorithm { return s.alg }

// ChunkSize is the plaintext size of a full chunk.
func (s *Suite) ChunkSize() int { return s.chunkSize }

// NonceSize is the size of the stored per-chunk nonce.
func (s *Suite) NonceSize() int { return s.nonceSize }

// Overhead is the stored size minus the plaintext size of one chunk.
func (s *Suite) Overhead() int { return s.nonceSize + TagSize }

// CipherChunkSize is the stored size of a full chunk.
func (s *Suite) CipherChunkSize() int { return s.chunkSize + s.Overhead() }

// CipherSize maps a plaintext size to the backing file size (0 -> 0).
// A negative size is a programmer error and panics; a size above
// MaxPlainSize overflows (callers bound sizes first).
func (s *Suite) CipherSize(plain int64) int64 {
	if plain < 0 {
		panic("content: negative plaintext size")
	}
	if plain == 0 {
		return 0
	}
	if s.roots {
		return s.cipherSizeRoots(plain)
	}
	cs := int64(s.chunkSize)
	chunks := (plain + cs - 1) / cs
	return int64(s.HeaderSize()) + plain + chunks*int64(s.Overhead())
}

// PlainSize maps a backing file size to the plaintext size, or ErrTruncated.
// A header-only file is size 0.
func (s *Suite) PlainSize(cipher int64) (int64, error) {
	hs := int64(s.HeaderSize())
	switch {
	case cipher == 0:
		return 0, nil
	case cipher < hs:
		return 0, fmt.Errorf("%w: %d bytes is shorter than the header", ErrTruncated, cipher)
	}
	body := cipher - hs
	if s.roots {
		return s.plainSizeRoots(body)
	}
	ccs := int64(s.CipherChunkSize())
	full, rest := body/ccs, body%ccs
	plain := full * int64(s.chunkSize)
	if rest == 0 {
		return plain, nil
	}
	if rest <= int64(s.Overhead()) {
		return 0, fmt.Errorf("%w: last chunk of %d bytes has no plaintext", ErrTruncated, rest)
	}
	return plain + rest - int64(s.Overhead()), nil
}

// IsHole reports whether a stored chunk is all zero bytes (a hole candidate;
// the engine decides with the SPARSE flag and position whether it is allowed).
// An empty slice is not a hole.
func IsHole(chunk []byte) bool {
	if len(chunk) == 0 {
		return false
	}
	var acc byte
	for len(chunk) >= 8 {
		acc |= chunk[0] | chunk[1] | chunk[2] | chunk[3] | chunk[4] | chunk[5] | chunk[6] | chunk[7]
		if acc != 0 {
			return false
		}
		chunk = chunk[8:]
	}
	for _, b := range chunk {
		acc |= b
	}
	return acc == 0
}
