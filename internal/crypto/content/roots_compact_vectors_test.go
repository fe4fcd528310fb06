package content

import (
	"bytes"
	"crypto/sha256"
	"io"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

// compactFileVector is a whole stored file of a compact roots suite.
type compactFileVector struct {
	Algorithm Algorithm
	ChunkSize int
	FileID    vectortest.Hex
	Plaintext vectortest.Hex // with 3 chunks, chunk 1 is a hole (zeros, zero entry)
	Nonces    []vectortest.Hex
	Stored    vectortest.Hex
}

type compactVectors struct {
	Description  string
	ContentsKey  vectortest.Hex
	HeaderMACKey vectortest.Hex
	Files        []compactFileVector
	Sizes        []rootsSizeVector
}

// sealCompact stores plain (1 or 3 chunks; with 3, chunk 1 a hole; or up
// to 256 chunks) in a compact suite: header, chunks at ChunkOffset,
// entries in the pieces of tag block 0 the file has, and the root over
// tag block 0's entries under the suite's rule.
func sealCompact(t *testing.T, s *Suite, id FileID, plain []byte, nonce func() []byte) ([]byte, []vectortest.Hex) {
	fc, err := s.File(id)
	if err != nil {
		t.Fatal(err)
	}
	cs := s.ChunkSize()
	n := uint64((len(plain) + cs - 1) / cs)
	stored := make([]byte, s.CipherSize(int64(len(plain))))
	block := make([]byte, TagBlockSize)
	var nonces []vectortest.Hex
	for i := range n {
		if n == 3 && i == 1 {
			continue // a hole
		}
		nc := nonce()
		nonces = append(nonces, nc)
		sealed := fc.Seal(nil, plain[i*uint64(cs):min((i+1)*uint64(cs), uint64(len(plain)))], i, i == n-1, nc)
		copy(stored[s.ChunkOffset(i):], sealed)
		copy(block[i*TagSize:], fc.ChunkTag(sealed))
	}
	for _, p := range s.TagPieces(0, n) {
		copy(stored[p.Offset:], block[p.First*TagSize:(p.First+p.Count)*TagSize])
	}
	l := s.NewLeaves() // trimmed in a suite with them (roots_trimmed_vectors_test.go)
	h := Header{Flags: l.Flag(), FileID: id, Size: uint64(len(plain)), Gen: 2}
	if h.Root, err = s.Root(l, id, h.Size, h.Gen, [][sha256.Size]byte{l.Hash(block)}); err != nil {
		t.Fatal(err)
	}
	copy(stored, s.MarshalHeader(h))
	return stored, nonces
}

// compactFiles are the stored files of the vectors of suite s (compact):
// one chunk, and three with chunk 1 a hole.
func compactFiles(t *testing.T, s *Suite, rnd io.Reader) []compactFileVector {
	var out []compactFileVector
	for _, size := range []int{1, 2*MinChunk + 10} {
		var id FileID
		copy(id[:], vectortest.Bytes(t, rnd, FileIDSize))
		plain := make([]byte, size)
		copy(plain, vectortest.Bytes(t, rnd, min(size, MinChunk)))
		if size > MinChunk {
			copy(plain[2*MinChunk:], vectortest.Bytes(t, rnd, 10))
		}
		stored, nonces := sealCompact(t, s, id, plain, func() []byte { return vectortest.Bytes(t, rnd, s.NonceSize()) })
		out = append(out, compactFileVector{s.Algorithm(), s.ChunkSize(), id[:], plain, nonces, stored})
	}
	return out
}

func generateCompactVectors(t *testing.T) compactVectors {
	k, err := keys.Derive(vectortest.MasterKey())
	if err != nil {
		t.Fatal(err)
	}
	v := compactVectors{
		Description: "Compact file roots (format v2, FileRoots + CompactRoots): as roots-v2.json, but chunk 0 at 128, " +
			"entries 0..15 after chunk 0 (file of 2+ chunks), chunks 1..15, entries 16..255 after chunk 15 (17+ chunks), then as FileRoots; " +
			"a 1-chunk file stores no entry (root over tag(chunk 0) ‖ zeros).",
		ContentsKey:  k.Contents,
		HeaderMACKey: k.HeaderMAC,
	}
	rnd := vectortest.Rand("compact roots vectors")
	for _, alg := range Algorithms() {
		s, err := NewCompactRootsSuite(alg, MinChunk, k.Contents, k.HeaderMAC)
		if err != nil {
			t.Fatal(err)
		}
		v.Files = append(v.Files, compactFiles(t, s, rnd)...)
	}
	for _, cs := range []int{MinChunk, 16 << 10} {
		s, _ := NewCompactRootsSuite(AES256GCM, cs, k.Contents, k.HeaderMAC)
		for _, n := range []int64{0, 1, int64(cs), int64(cs) + 1, 16 * int64(cs), 16*int64(cs) + 1, 256 * int64(cs), 256*int64(cs) + 1, 1 << 30} {
			v.Sizes = append(v.Sizes, rootsSizeVector{cs, n, s.CipherSize(n)})
		}
	}
	return v
}

// TestCompactVectors checks testdata/vectors/roots-compact-v2.json
// (rewrite it with -update) and reads every stored file from its own
// bytes: header, size, the root over tag block 0 assembled from the
// stored pieces (or chunk 0's tag), each chunk against its entry.
func TestCompactVectors(t *testing.T) {
	var file compactVectors
	vectortest.Check(t, "roots-compact-v2.json", generateCompactVectors(t), &file)
	for _, fv := range file.Files {
		s, err := NewCompactRootsSuite(fv.Algorithm, fv.ChunkSize, file.ContentsKey, file.HeaderMACKey)
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.ParseHeader(fv.Stored[:HeaderSizeV2])
		if err != nil {
			t.Fatalf("%s: %v", fv.Algorithm, err)
		}
		size, err := s.PlainSize(int64(len(fv.Stored)))
		if err != nil || uint64(size) != h.Size || int(size) != len(fv.Plaintext) {
			t.Fatalf("%s: size %d/%d, %v", fv.Algorithm, size, h.Size, err)
		}
		fc, _ := s.File(h.FileID)
		n := uint64((size + int64(fv.ChunkSize) - 1) / int64(fv.ChunkSize))
		stored := func(i uint64) []byte {
			l := min(uint64(fv.ChunkSize), uint64(size)-i*uint64(fv.ChunkSize))
			return fv.Stored[s.ChunkOffset(i) : s.ChunkOffset(i)+int64(l)+int64(s.Overhead())]
		}
		block := make([]byte, TagBlockSize)
		if n == 1 {
			copy(block, fc.ChunkTag(stored(0)))
		}
		for _, p := range s.TagPieces(0, n) {
			copy(block[p.First*TagSize:], fv.Stored[p.Offset:p.Offset+int64(p.Count)*TagSize])
		}
		root, _ := s.Root(WholeLeaves, h.FileID, h.Size, h.Gen, [][sha256.Size]byte{TagBlockHash(block)})
		if err := CheckRoot(h.Root, root); err != nil {
			t.Fatalf("%s: %v", fv.Algorithm, err)
		}
		var got []byte
		for i := range n {
			entry := block[i*TagSize : (i+1)*TagSize]
			c := stored(i)
			if bytes.Equal(entry, make([]byte, TagSize)) {
				got = append(got, make([]byte, len(c)-s.Overhead())...)
				continue
			}
			if !bytes.Equal(fc.ChunkTag(c), entry) {
				t.Fatalf("%s: chunk %d tag is not its entry", fv.Algorithm, i)
			}
			if got, err = fc.Open(got, c, i, i == n-1); err != nil {
				t.Fatalf("%s: chunk %d: %v", fv.Algorithm, i, err)
			}
		}
		if !bytes.Equal(got, fv.Plaintext) {
			t.Fatalf("%s: plaintext differs", fv.Algorithm)
		}
	}
	for _, sz := range file.Sizes {
		s, _ := NewCompactRootsSuite(AES256GCM, sz.ChunkSize, make([]byte, 32), make([]byte, 32))
		if got, err := s.PlainSize(sz.CipherSize); err != nil || got != sz.PlainSize {
			t.Errorf("%d: PlainSize(%d) = %d, %v, want %d", sz.ChunkSize, sz.CipherSize, got, err, sz.PlainSize)
		}
	}
}
