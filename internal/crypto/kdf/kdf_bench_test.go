package kdf

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkKey measures candidate default costs. Run it alone, on a quiet
// machine: go test -run x -bench Key -benchtime 3x ./internal/crypto/kdf
func BenchmarkKey(b *testing.B) {
	for _, c := range []struct {
		mib, time uint32
		threads   uint8
	}{
		{256, 3, 4}, {512, 2, 4}, {512, 3, 4}, {512, 4, 4}, {1024, 2, 4},
	} {
		b.Run(fmt.Sprintf("m=%dMiB/t=%d/p=%d", c.mib, c.time, c.threads), func(b *testing.B) {
			p := Params{Algorithm: Algorithm, Salt: bytes.Repeat([]byte{1}, SaltSize), Time: c.time, MemoryKiB: c.mib * 1024, Threads: c.threads}
			for b.Loop() {
				if _, err := p.Key([]byte("password")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
