package reversefs

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
)

// BenchmarkRead measures the view's read path without FUSE: sequential
// reads of a 16 MiB file in kernel-sized requests (header, chunk sealing,
// edge cache, parallel sealing for large requests). Results are noisy on
// a shared machine; compare medians of -count runs.
func BenchmarkRead(b *testing.B) {
	plain := b.TempDir()
	const size = 16 << 20
	data := make([]byte, size)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(plain, "f"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(plain, ConfigName), []byte("{}"), 0o400)
	k, err := kdf.New(rand.Reader, 1, kdf.MinMemoryKiB, 1)
	if err != nil {
		b.Fatal(err)
	}
	master := make([]byte, 32)
	r, err := newRoot(b, plain, config.NewParams(string(content.AES256SIV), content.DefaultChunkSize, k), master, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for _, req := range []int{128 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("req=%dK", req>>10), func(b *testing.B) {
			h, err := r.openFile("f")
			if err != nil {
				b.Fatal(err)
			}
			defer h.Release(context.Background())
			total := r.v.CipherSize(size)
			buf := make([]byte, req)
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for off := int64(0); off < total; off += int64(req) {
					if err := h.fill(buf[:min(int64(req), total-off)], off); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
