package fileengine

import (
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// TestIsZero: isZero finds one non-zero byte anywhere in a buffer of an
// entry's, a tag block's or a longer size, and takes all zeros (and an
// empty buffer) for zero.
func TestIsZero(t *testing.T) {
	for _, n := range []int{0, 1, content.TagSize, content.TagBlockSize - 1, content.TagBlockSize, content.TagBlockSize + 1, 3*content.TagBlockSize + 5} {
		b := make([]byte, n)
		if !isZero(b) {
			t.Fatalf("%d zeros: not zero", n)
		}
		for _, at := range []int{0, n / 2, n - 1} {
			if at < 0 || at >= n {
				continue
			}
			b[at] = 0x80
			if isZero(b) {
				t.Fatalf("%d bytes, byte %d set: zero", n, at)
			}
			b[at] = 0
		}
	}
}
