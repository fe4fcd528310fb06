package reversefs

import (
	"crypto/sha256"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/session"
)

// testChunk is the chunk size of the test vaults (the smallest allowed,
// so that multi-chunk files stay small).
const testChunk = content.MinChunk

// newRoot builds the reverse session of plainDir from p and master and
// the view's Root over it; the session is closed in t.Cleanup.
func newRoot(t testing.TB, plainDir string, p config.Params, master []byte, o Options) (*Root, error) {
	t.Helper()
	s, err := session.NewReverse(plainDir, p, master)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { s.Close() })
	return NewRoot(s, o)
}

// fill returns n deterministic pseudo-random bytes for seed.
func fill(seed string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	block := sha256.Sum256([]byte(seed))
	for len(out) < n {
		out = append(out, block[:]...)
		block = sha256.Sum256(block[:])
	}
	return out[:n]
}
