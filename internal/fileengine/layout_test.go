package fileengine

import (
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// The layout tables (newLayout) must place every byte where the
// per-format branches they replaced did: these are those branches.

func refCipherOffset(l layout, i uint64) int64 {
	off := l.header + int64(i)*l.cipherChunk
	switch {
	case l.compact && i == 0:
	case l.compact && i < content.CompactHeadEntries:
		off += content.CompactHeadEntries * content.TagSize
	case l.tagged:
		off += int64(i/content.TagEntries+1) * content.TagBlockSize
	}
	return off
}

func refRunEnd(l layout, i, last uint64) uint64 {
	switch {
	case l.compact && i == 0:
		return 0
	case l.compact && i < content.CompactHeadEntries:
		return min(last, content.CompactHeadEntries-1)
	case l.tagged:
		return min(last, i|(content.TagEntries-1))
	}
	return last
}

func refEntryOffset(l layout, i uint64) int64 {
	switch {
	case l.compact && i < content.CompactHeadEntries:
		return l.header + l.cipherChunk + int64(i)*content.TagSize
	case l.compact && i < content.TagEntries:
		return l.header + content.CompactHeadEntries*(l.cipherChunk+content.TagSize) + int64(i-content.CompactHeadEntries)*content.TagSize
	}
	return l.tagBlockOffset(i/content.TagEntries) + int64(i%content.TagEntries)*content.TagSize
}

func refEntryRunEnd(l layout, i uint64) uint64 {
	if l.compact && i < content.CompactHeadEntries {
		return content.CompactHeadEntries - 1
	}
	return i | (content.TagEntries - 1)
}

func refEntryStored(l layout, i, n uint64) bool {
	switch {
	case l.compact && i < content.CompactHeadEntries:
		return n >= 2
	case l.compact && i < content.TagEntries:
		return n > content.CompactHeadEntries
	}
	return true
}

func refCipherSize(l layout, size int64) int64 {
	if size == 0 {
		return 0
	}
	chunks := (size + l.chunk - 1) / l.chunk
	n := l.header + size + chunks*l.overhead
	if l.tagged {
		n += (chunks + content.TagEntries - 1) / content.TagEntries * content.TagBlockSize
	}
	if l.compact && chunks <= content.CompactHeadEntries {
		n -= content.TagBlockSize - content.CompactHeadEntries*content.TagSize
		if chunks == 1 {
			n -= content.CompactHeadEntries * content.TagSize
		}
	}
	return n
}

func TestLayoutTablesMatchBranches(t *testing.T) {
	const C = 4096
	base := layout{chunk: C, cipherChunk: C + 32, overhead: 32, maxSize: 1 << 40, header: 68}
	for _, f := range []struct {
		name            string
		tagged, compact bool
	}{{"v1", false, false}, {"roots", true, false}, {"compact", true, true}} {
		l := newLayout(base, f.tagged, f.compact)
		for i := uint64(0); i < 3*content.TagEntries+5; i++ {
			if got, want := l.cipherOffset(i), refCipherOffset(l, i); got != want {
				t.Fatalf("%s: cipherOffset(%d) = %d, want %d", f.name, i, got, want)
			}
			if f.tagged {
				if got, want := l.entryOffset(i), refEntryOffset(l, i); got != want {
					t.Fatalf("%s: entryOffset(%d) = %d, want %d", f.name, i, got, want)
				}
				if got, want := l.entryRunEnd(i), refEntryRunEnd(l, i); got != want {
					t.Fatalf("%s: entryRunEnd(%d) = %d, want %d", f.name, i, got, want)
				}
				for n := uint64(0); n < 20; n++ {
					if got, want := l.entryStored(i, n), refEntryStored(l, i, n); got != want {
						t.Fatalf("%s: entryStored(%d, %d) = %v, want %v", f.name, i, n, got, want)
					}
				}
			}
			for _, last := range []uint64{i, i + 1, i + 15, i + 300, 1 << 40} {
				if got, want := l.runEnd(i, last), refRunEnd(l, i, last); got != want {
					t.Fatalf("%s: runEnd(%d, %d) = %d, want %d", f.name, i, last, got, want)
				}
			}
		}
		for _, n := range []int64{0, 1, C - 1, C, C + 1, 2 * C, 15*C + 1, 16 * C, 16*C + 1, 17 * C, 256 * C, 256*C + 1, 1000*C + 7} {
			if got, want := l.cipherSize(n), refCipherSize(l, n); got != want {
				t.Fatalf("%s: cipherSize(%d) = %d, want %d", f.name, n, got, want)
			}
		}
	}
}
