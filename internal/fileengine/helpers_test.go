package fileengine

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// testAlgorithms are the chunk ciphers every table test covers.
var testAlgorithms = []content.Algorithm{content.AES256GCM, content.XChaCha20Poly1305, content.AES256SIV}

// testKeys are fixed keys: the tests need reproducible, not secret, keys.
func testKeys() (contentsKey, headerMACKey []byte) {
	contentsKey = bytes.Repeat([]byte{0x11}, 32)
	headerMACKey = bytes.Repeat([]byte{0x22}, 32)
	return
}

// newTestSuite builds a suite or fails the test.
func newTestSuite(tb testing.TB, alg content.Algorithm, chunkSize int) *content.Suite {
	tb.Helper()
	ck, hk := testKeys()
	s, err := content.NewSuite(alg, chunkSize, ck, hk)
	if err != nil {
		tb.Fatalf("NewSuite(%s, %d): %v", alg, chunkSize, err)
	}
	return s
}

// seededRand is a deterministic io.Reader for file IDs and nonces.
func seededRand(seed uint64) io.Reader {
	var s [32]byte
	s[0] = byte(seed)
	s[1] = byte(seed >> 8)
	return rand.NewChaCha8(s)
}

// sequential are engine options with the bulk path off.
func sequential(seed uint64) Options {
	return Options{Rand: seededRand(seed)}
}

// parallel are engine options that send even 2-chunk requests to 4 workers,
// so the bulk path is exercised by small tests too.
func parallel(seed uint64) Options {
	return Options{Rand: seededRand(seed), Parallel: ParallelOptions{Enabled: true, MaxWorkers: 4, MinChunks: 2}}
}

// openMem opens a File over a MemBacking or fails the test.
func openMem(tb testing.TB, e *Engine, m *MemBacking) *File {
	tb.Helper()
	f, err := e.Open(m)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return f
}

// mustWrite writes p at off or fails the test.
func mustWrite(tb testing.TB, f *File, p []byte, off int64) {
	tb.Helper()
	n, err := f.WriteAt(p, off)
	if err != nil || n != len(p) {
		tb.Fatalf("WriteAt(%d bytes at %d) = %d, %v", len(p), off, n, err)
	}
}

// readAll reads the whole file through ReadAt in one request.
func readAll(f *File) ([]byte, error) {
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err == io.EOF && int64(n) == size {
		err = nil
	}
	return buf[:n], err
}

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// isAuthError reports whether err is one of the content sentinels that mean
// "this ciphertext is not what we wrote".
func isAuthError(err error) bool {
	return errors.Is(err, content.ErrCorruptChunk) || errors.Is(err, content.ErrBadHeader) ||
		errors.Is(err, content.ErrTruncated)
}

// checkNoGarbage checks the contract of a failed read: the n bytes
// delivered are the true plaintext and everything after them is zero.
func checkNoGarbage(tb testing.TB, got []byte, n int, want []byte, off int64) {
	tb.Helper()
	if n > len(got) {
		tb.Fatalf("n = %d > len %d", n, len(got))
	}
	if !bytes.Equal(got[:n], want[off:off+int64(n)]) {
		tb.Fatalf("failed read delivered %d bytes that differ from the plaintext", n)
	}
	for i, c := range got[n:] {
		if c != 0 {
			tb.Fatalf("failed read left byte %#x at %d beyond n=%d", c, n+i, n)
		}
	}
}
