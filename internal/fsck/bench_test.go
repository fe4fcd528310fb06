package fsck

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
)

// BenchmarkCheck measures checking (and salvaging) a vault with one 32 MiB
// file at the default chunk size; bytes are plaintext bytes.
func BenchmarkCheck(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "cipher")
	if err := os.Mkdir(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	v, err := vault.Create(dir, []byte("pw"), vault.Options{KDFTime: 1, KDFMemoryKiB: 8192, KDFThreads: 1})
	if err != nil {
		b.Fatal(err)
	}
	const size = 32 << 20
	if err := v.WriteFile("f", testData(1, size), 0o600); err != nil {
		b.Fatal(err)
	}
	master := v.MasterKey()
	v.Close()
	c, err := config.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	s, err := session.New(dir, c.Params, master, session.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, salvage := range []bool{false, true} {
		name := "check"
		if salvage {
			name = "salvage"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; b.Loop(); i++ {
				var opts Options
				if salvage {
					opts.Salvage = filepath.Join(b.TempDir(), "out")
				}
				rep, err := Check(context.Background(), s, opts)
				if err != nil || !rep.Clean {
					b.Fatal(err, rep)
				}
			}
		})
	}
}
