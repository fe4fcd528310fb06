package vault

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkStat: Stat of a file at depth 1 and 4, over and over, as a
// WebDAV door does for each entry it lists: the cost of resolving a path
// (dircache.go).
func BenchmarkStat(b *testing.B) {
	for _, depth := range []int{1, 4} {
		b.Run(fmt.Sprint("depth=", depth), func(b *testing.B) {
			v, err := Create(b.TempDir(), testPassword, cheap)
			if err != nil {
				b.Fatal(err)
			}
			defer v.Close()
			dir := strings.Repeat("directory/", depth-1)
			if dir != "" {
				if err := v.MkdirAll(dir, 0o700); err != nil {
					b.Fatal(err)
				}
			}
			if err := v.WriteFile(dir+"f", []byte("x"), 0o600); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := v.Stat(dir + "f"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
