package content

import (
	"bytes"
	"errors"
	"testing"
)

// TestCompactSizes: in the compact layout CipherSize and PlainSize are
// inverse around every piece of tag block 0 and past it, a file of one
// chunk stores no entry (1 byte: 161 bytes with AES-GCM), chunk offsets
// leave room for exactly the pieces TagPieces names, chunks 16 and up sit
// where FileRoots puts them, and a backing file cut inside a piece reads
// as the chunks before it.
func TestCompactSizes(t *testing.T) {
	key := make([]byte, 32)
	for _, cs := range []int64{MinChunk, 16 << 10} {
		s, _ := NewCompactRootsSuite(AES256GCM, int(cs), key, key)
		r, _ := NewRootsSuite(AES256GCM, int(cs), key, key)
		ccs := int64(s.CipherChunkSize())
		if got := s.CipherSize(1); got != HeaderSizeV2+1+32 {
			t.Errorf("1-byte file: %d bytes", got)
		}
		if got := s.CipherSize(cs); got != HeaderSizeV2+ccs {
			t.Errorf("1-chunk file: %d bytes, want no tag block", got)
		}
		if got := s.CipherSize(cs + 1); got != HeaderSizeV2+ccs+compactHeadSize+1+32 {
			t.Errorf("2-chunk file: %d bytes", got)
		}
		for _, n := range []int64{1, cs - 1, cs, cs + 1, 2 * cs, 15*cs + 1, 16 * cs, 16*cs + 1, 17 * cs, 255 * cs, 256*cs - 1, 256 * cs, 256*cs + 1, 512*cs + 3, 1000 * cs} {
			c := s.CipherSize(n)
			if got, err := s.PlainSize(c); err != nil || got != n {
				t.Errorf("cs %d: PlainSize(CipherSize(%d) = %d) = %d, %v", cs, n, c, got, err)
			}
			chunks := uint64((n + cs - 1) / cs)
			last := chunks - 1
			if end := s.ChunkOffset(last) + (n - int64(last)*cs) + int64(s.Overhead()); end != c {
				t.Errorf("cs %d size %d: last chunk ends at %d, CipherSize %d", cs, n, end, c)
			}
			if chunks > CompactHeadEntries && c != r.CipherSize(n) {
				t.Errorf("cs %d size %d: %d bytes, FileRoots %d", cs, n, c, r.CipherSize(n))
			}
			// Every stored byte is the header, a chunk or an entry, once.
			used := int64(HeaderSizeV2) + n + int64(chunks)*int64(s.Overhead())
			for g := uint64(0); g < (chunks+TagEntries-1)/TagEntries; g++ {
				for _, p := range s.TagPieces(g, chunks) {
					used += int64(p.Count) * TagSize
					if p.Offset+int64(p.Count)*TagSize > c {
						t.Errorf("cs %d size %d: piece %+v past the end %d", cs, n, p, c)
					}
				}
			}
			if used != c {
				t.Errorf("cs %d size %d: pieces and chunks %d bytes, CipherSize %d", cs, n, used, c)
			}
		}
		for i := uint64(CompactHeadEntries); i < 600; i += 37 {
			if s.ChunkOffset(i) != r.ChunkOffset(i) {
				t.Errorf("chunk %d at %d, FileRoots %d", i, s.ChunkOffset(i), r.ChunkOffset(i))
			}
		}
		if p := s.TagPieces(0, 1); len(p) != 0 {
			t.Errorf("1-chunk file has tag pieces %v", p)
		}
		p := s.TagPieces(0, 300)
		if len(p) != 2 || p[0].Offset != s.ChunkOffset(0)+ccs || s.ChunkOffset(1) != p[0].Offset+compactHeadSize ||
			p[1].Offset != s.ChunkOffset(15)+ccs || s.ChunkOffset(16) != p[1].Offset+int64(p[1].Count)*TagSize {
			t.Errorf("pieces %v do not sit between chunks 0/1 and 15/16", p)
		}
		// Cut inside piece A and piece B: the chunks before.
		if got, err := s.PlainSize(HeaderSizeV2 + ccs + 7); err != nil || got != cs {
			t.Errorf("cut inside piece A: %d, %v", got, err)
		}
		if got, err := s.PlainSize(s.CipherSize(16*cs) + 100); err != nil || got != 16*cs {
			t.Errorf("cut inside piece B: %d, %v", got, err)
		}
		if _, err := s.PlainSize(HeaderSizeV2 + ccs + compactHeadSize + 5); !errors.Is(err, ErrTruncated) {
			t.Errorf("cut inside chunk 1's nonce: %v", err)
		}
		if _, err := s.PlainSize(HeaderSizeV2 + 20); !errors.Is(err, ErrTruncated) {
			t.Errorf("cut inside chunk 0's nonce: %v", err)
		}
		if s.MaxPlainSize() != r.MaxPlainSize() {
			t.Error("compact changes the largest file")
		}
	}
}

// TestCompactHeaderIsRoots: a compact suite reads and writes exactly the
// headers of a roots suite (same MAC, same fields): the upgrade between
// the two layouts leaves headers as they are.
func TestCompactHeaderIsRoots(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	r, _ := NewRootsSuite(AES256GCM, MinChunk, key, key)
	c, _ := NewCompactRootsSuite(AES256GCM, MinChunk, key, key)
	h := Header{Size: 12345, Gen: 99}
	h.FileID[3], h.Root[0] = 1, 2
	if !bytes.Equal(r.MarshalHeader(h), c.MarshalHeader(h)) {
		t.Fatal("headers differ")
	}
	if got, err := c.ParseHeader(r.MarshalHeader(h)); err != nil || got != h {
		t.Fatalf("%+v, %v", got, err)
	}
}
