package session

import (
	"io"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// The constants and KDF helpers the CLI shows and checks, re-exported so
// that the CLI needs no crypto, core or tree package of its own: it opens
// vaults only through this package and vault.

// Algorithm is a content cipher's name as stored in the config.
type Algorithm = content.Algorithm

// The content ciphers of format v1.
const (
	AES256GCM         = content.AES256GCM
	XChaCha20Poly1305 = content.XChaCha20Poly1305
	AES256SIV         = content.AES256SIV // reverse mode only
)

// DefaultChunkSize is the plaintext chunk size of a new vault.
const DefaultChunkSize = content.DefaultChunkSize

// MasterKeySize is the size of a vault's master key in bytes.
const MasterKeySize = keys.MasterKeySize

// DirIDFile is the name of a backing directory's ID file.
const DirIDFile = names.DirIDFile

// BadNameSuffix marks an undecryptable entry in a listing that shows them
// (mount --show-undecryptable).
const BadNameSuffix = tree.BadNameSuffix

// KDFParams are Argon2id parameters with their salt.
type KDFParams = kdf.Params

// Bounds and defaults of the Argon2id costs (internal/crypto/kdf says why).
const (
	MinKDFTime, MaxKDFTime           = kdf.MinTime, kdf.MaxTime
	MinKDFMemoryKiB, MaxKDFMemoryKiB = kdf.MinMemoryKiB, kdf.MaxMemoryKiB
	MinKDFThreads, MaxKDFThreads     = kdf.MinThreads, kdf.MaxThreads
	DefaultKDFTime                   = kdf.DefaultTime
	DefaultKDFMemoryKiB              = kdf.DefaultMemoryKiB
	DefaultKDFThreads                = kdf.DefaultThreads
)

// ErrKDFParams: Argon2id costs out of bounds.
var ErrKDFParams = kdf.ErrParams

// NewKDFParams returns Argon2id parameters with these costs and a fresh
// salt from rand.
func NewKDFParams(rand io.Reader, time, memoryKiB uint32, threads uint8) (KDFParams, error) {
	return kdf.New(rand, time, memoryKiB, threads)
}
