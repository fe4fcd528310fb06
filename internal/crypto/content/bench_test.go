package content

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"testing"
)

// The raw AES-256-GCM benchmarks are the single-core ceiling the engine is
// compared against: no AD pool, no per-file key, just the AEAD.
// Run: go test -run x -bench . -count 5 ./internal/crypto/content

func newRawGCM(b *testing.B, nonceSize int) cipher.AEAD {
	block, err := aes.NewCipher(testKey(32, 1))
	if err != nil {
		b.Fatal(err)
	}
	aead, err := cipher.NewGCMWithNonceSize(block, nonceSize)
	if err != nil {
		b.Fatal(err)
	}
	return aead
}

var benchSizes = []int{4 << 10, 64 << 10, 1 << 20}

func BenchmarkRawGCMSeal(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) {
			aead := newRawGCM(b, 16)
			nonce, ad, plain := make([]byte, 16), make([]byte, adSize), make([]byte, size)
			dst := make([]byte, 0, size+TagSize)
			b.SetBytes(int64(size))
			for b.Loop() {
				aead.Seal(dst, nonce, plain, ad)
			}
		})
	}
}

func BenchmarkRawGCMOpen(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) {
			aead := newRawGCM(b, 16)
			nonce, ad := make([]byte, 16), make([]byte, adSize)
			sealed := aead.Seal(nil, nonce, make([]byte, size), ad)
			dst := make([]byte, 0, size)
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := aead.Open(dst, nonce, sealed, ad); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGCMNonceSize compares the standard 12-byte nonce with our
// 16-byte one (one extra GHASH block to derive the counter) at 64 KiB.
func BenchmarkGCMNonceSize(b *testing.B) {
	const size = 64 << 10
	for _, ns := range []int{12, 16} {
		b.Run(fmt.Sprintf("nonce=%d/seal", ns), func(b *testing.B) {
			aead := newRawGCM(b, ns)
			nonce, ad, plain := make([]byte, ns), make([]byte, adSize), make([]byte, size)
			dst := make([]byte, 0, size+TagSize)
			b.SetBytes(size)
			for b.Loop() {
				aead.Seal(dst, nonce, plain, ad)
			}
		})
	}
}

// BenchmarkFileCipher measures Seal and Open of one 64 KiB chunk through
// the package API, for each algorithm.
func BenchmarkFileCipher(b *testing.B) {
	const size = DefaultChunkSize
	for _, alg := range Algorithms() {
		s, err := NewSuite(alg, size, testKey(32, 1), testKey(32, 2))
		if err != nil {
			b.Fatal(err)
		}
		f, err := s.File(FileID{1})
		if err != nil {
			b.Fatal(err)
		}
		nonce, plain := testKey(s.NonceSize(), 3), make([]byte, size)
		sealed := f.Seal(nil, plain, 1, false, nonce)
		b.Run(string(alg)+"/seal", func(b *testing.B) {
			dst := make([]byte, 0, s.CipherChunkSize())
			b.SetBytes(size)
			for b.Loop() {
				f.Seal(dst, plain, 1, false, nonce)
			}
		})
		b.Run(string(alg)+"/open", func(b *testing.B) {
			dst := make([]byte, 0, size)
			b.SetBytes(size)
			for b.Loop() {
				if _, err := f.Open(dst, sealed, 1, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFile measures deriving a per-file cipher (done once per open file).
func BenchmarkFile(b *testing.B) {
	for _, alg := range Algorithms() {
		s, err := NewSuite(alg, DefaultChunkSize, testKey(32, 1), testKey(32, 2))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(alg), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.File(FileID{2}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}
