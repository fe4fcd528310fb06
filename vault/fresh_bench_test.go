package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/session"
)

// BenchmarkFreshnessSmallFiles: 200 small files written and the vault
// closed (with freshness: the notes per change and the last batch), with
// and without freshness, side by side.
func BenchmarkFreshnessSmallFiles(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprint("freshness=", on), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				tmp := b.TempDir()
				dir := filepath.Join(tmp, "cipher")
				os.Mkdir(dir, 0o700)
				so := session.Options{BoundVaultID: freshVaultID}
				if on {
					so = freshOptions(filepath.Join(tmp, "state"), false)
				}
				v, err := create(dir, testPassword, cheap, so)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for i := range 200 {
					if err := v.WriteFile(fmt.Sprintf("f%03d", i), []byte("small file"), 0o600); err != nil {
						b.Fatal(err)
					}
				}
				if err := v.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
