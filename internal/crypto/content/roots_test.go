package content

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

// rootVector is one Root computation.
type rootVector struct {
	Name   string
	FileID vectortest.Hex
	Size   uint64
	Gen    uint64
	Blocks int            // number of tag blocks; block k's hash is SHA-256 of "block" ‖ k (a stand-in)
	Root   vectortest.Hex // Root(FileID, Size, Gen, hashes)
}

// rootsFileVector is a whole stored file of a roots suite.
type rootsFileVector struct {
	Algorithm Algorithm
	ChunkSize int
	FileID    vectortest.Hex
	Plaintext vectortest.Hex // chunk 1 is a hole (zeros, zero entry)
	Nonces    []vectortest.Hex
	Stored    vectortest.Hex // header ‖ tag block 0 ‖ chunks 0..2 (chunk 1: zeros)
}

type rootsSizeVector struct {
	ChunkSize  int
	PlainSize  int64
	CipherSize int64
}

type rootsVectors struct {
	Description  string
	MasterKey    vectortest.Hex
	ContentsKey  vectortest.Hex
	HeaderMACKey vectortest.Hex
	Roots        []rootVector
	Files        []rootsFileVector
	Sizes        []rootsSizeVector
}

// standInHashes are the tag block hashes of rootVector.Blocks.
func standInHashes(n int) [][sha256.Size]byte {
	out := make([][sha256.Size]byte, n)
	for k := range out {
		out[k] = sha256.Sum256([]byte{'b', 'l', 'o', 'c', 'k', byte(k >> 8), byte(k)})
	}
	return out
}

func generateRootsVectors(t *testing.T) rootsVectors {
	k, err := keys.Derive(vectortest.MasterKey())
	if err != nil {
		t.Fatal(err)
	}
	v := rootsVectors{
		Description: "File roots (format v2, FileRoots): root = HMAC-SHA256(HeaderMACKey, \"encryptfs v2 file root\" ‖ fileID ‖ size u64 ‖ gen u64 ‖ count u64 ‖ L...)[0:16], " +
			"L = tag block hashes SHA-256(0x00 ‖ block) if count <= 256, else SHA-256(0x01 ‖ 256 hashes) per run; " +
			"layout: header 128 ‖ per group of 256 chunks: tag block (256 × 16-byte entries: chunk tag, zero for a hole) ‖ chunks.",
		MasterKey:    vectortest.MasterKey(),
		ContentsKey:  k.Contents,
		HeaderMACKey: k.HeaderMAC,
	}
	rnd := vectortest.Rand("roots vectors")
	s, err := NewRootsSuite(AES256GCM, MinChunk, k.Contents, k.HeaderMAC)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		size, gen uint64
		blocks    int
	}{{"empty file", 0, 1, 0}, {"one block", 5000, 2, 1}, {"256 blocks", 1 << 30, 7, 256}, {"second level: 257 blocks", 1<<30 + 1, 8, 257}, {"600 blocks", 3 << 30, 9, 600}} {
		var id FileID
		copy(id[:], vectortest.Bytes(t, rnd, FileIDSize))
		root, err := s.Root(WholeLeaves, id, c.size, c.gen, standInHashes(c.blocks))
		if err != nil {
			t.Fatal(err)
		}
		v.Roots = append(v.Roots, rootVector{c.name, id[:], c.size, c.gen, c.blocks, root[:]})
	}
	for _, alg := range Algorithms() {
		s, err := NewRootsSuite(alg, MinChunk, k.Contents, k.HeaderMAC)
		if err != nil {
			t.Fatal(err)
		}
		var id FileID
		copy(id[:], vectortest.Bytes(t, rnd, FileIDSize))
		fc, err := s.File(id)
		if err != nil {
			t.Fatal(err)
		}
		plain := make([]byte, 2*MinChunk+10)
		copy(plain, vectortest.Bytes(t, rnd, MinChunk))
		copy(plain[2*MinChunk:], vectortest.Bytes(t, rnd, 10))
		fv := rootsFileVector{Algorithm: alg, ChunkSize: MinChunk, FileID: id[:], Plaintext: plain}
		stored := make([]byte, s.CipherSize(int64(len(plain))))
		block := stored[s.TagBlockOffset(0) : s.TagBlockOffset(0)+TagBlockSize]
		for i := uint64(0); i < 3; i++ {
			if i == 1 {
				continue // a hole
			}
			nonce := vectortest.Bytes(t, rnd, s.NonceSize())
			fv.Nonces = append(fv.Nonces, nonce)
			chunk := plain[i*MinChunk : min((i+1)*MinChunk, uint64(len(plain)))]
			sealed := fc.Seal(nil, chunk, i, i == 2, nonce)
			copy(stored[s.ChunkOffset(i):], sealed)
			copy(block[i*TagSize:], fc.ChunkTag(sealed))
		}
		h := Header{FileID: id, Size: uint64(len(plain)), Gen: 2}
		if h.Root, err = s.Root(WholeLeaves, id, h.Size, h.Gen, [][sha256.Size]byte{TagBlockHash(block)}); err != nil {
			t.Fatal(err)
		}
		copy(stored, s.MarshalHeader(h))
		fv.Stored = stored
		v.Files = append(v.Files, fv)
	}
	for _, cs := range []int{MinChunk, 64 << 10} {
		s, err := NewRootsSuite(AES256GCM, cs, k.Contents, k.HeaderMAC)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int64{0, 1, int64(cs), int64(cs) + 1, 256 * int64(cs), 256*int64(cs) + 1, 1 << 30} {
			v.Sizes = append(v.Sizes, rootsSizeVector{cs, n, s.CipherSize(n)})
		}
	}
	return v
}

// TestRootsVectors checks testdata/vectors/roots-v2.json (rewrite it with
// -update) and verifies every stored file from its own bytes: header,
// root over its tag block, each chunk's tag against its entry.
func TestRootsVectors(t *testing.T) {
	var file rootsVectors
	vectortest.Check(t, "roots-v2.json", generateRootsVectors(t), &file)
	for _, r := range file.Roots {
		s, _ := NewRootsSuite(AES256GCM, MinChunk, make([]byte, 32), file.HeaderMACKey)
		got, err := s.Root(WholeLeaves, FileID(r.FileID), r.Size, r.Gen, standInHashes(r.Blocks))
		if err != nil || !bytes.Equal(got[:], r.Root) {
			t.Errorf("%s: root %x, %v", r.Name, got, err)
		}
	}
	for _, fv := range file.Files {
		s, err := NewRootsSuite(fv.Algorithm, fv.ChunkSize, file.ContentsKey, file.HeaderMACKey)
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.ParseHeader(fv.Stored[:HeaderSizeV2])
		if err != nil {
			t.Fatalf("%s: %v", fv.Algorithm, err)
		}
		if size, err := s.PlainSize(int64(len(fv.Stored))); err != nil || uint64(size) != h.Size || int(size) != len(fv.Plaintext) {
			t.Fatalf("%s: size %d/%d, %v", fv.Algorithm, size, h.Size, err)
		}
		block := fv.Stored[s.TagBlockOffset(0) : s.TagBlockOffset(0)+TagBlockSize]
		root, _ := s.Root(WholeLeaves, h.FileID, h.Size, h.Gen, [][sha256.Size]byte{TagBlockHash(block)})
		if err := CheckRoot(h.Root, root); err != nil {
			t.Fatalf("%s: %v", fv.Algorithm, err)
		}
		fc, _ := s.File(h.FileID)
		var got []byte
		for i := uint64(0); i < 3; i++ {
			entry := block[i*TagSize : (i+1)*TagSize]
			n := min(uint64(fv.ChunkSize), uint64(len(fv.Plaintext))-i*uint64(fv.ChunkSize))
			stored := fv.Stored[s.ChunkOffset(i) : s.ChunkOffset(i)+int64(n)+int64(s.Overhead())]
			if bytes.Equal(entry, make([]byte, TagSize)) {
				got = append(got, make([]byte, n)...)
				continue
			}
			if !bytes.Equal(fc.ChunkTag(stored), entry) {
				t.Fatalf("%s: chunk %d tag is not its entry", fv.Algorithm, i)
			}
			if got, err = fc.Open(got, stored, i, i == 2); err != nil {
				t.Fatalf("%s: chunk %d: %v", fv.Algorithm, i, err)
			}
		}
		if !bytes.Equal(got, fv.Plaintext) {
			t.Fatalf("%s: plaintext differs", fv.Algorithm)
		}
	}
	for _, sz := range file.Sizes {
		s, _ := NewRootsSuite(AES256GCM, sz.ChunkSize, make([]byte, 32), make([]byte, 32))
		if got, err := s.PlainSize(sz.CipherSize); err != nil || got != sz.PlainSize {
			t.Errorf("%d: PlainSize(%d) = %d, %v, want %d", sz.ChunkSize, sz.CipherSize, got, err, sz.PlainSize)
		}
	}
}

// TestRootsSizes: CipherSize and PlainSize are inverse on every size
// around group boundaries, ChunkOffset leaves room for the tag blocks, and
// a backing file cut inside a tag block reads as the groups before it.
func TestRootsSizes(t *testing.T) {
	s, _ := NewRootsSuite(AES256GCM, MinChunk, make([]byte, 32), make([]byte, 32))
	cs := int64(MinChunk)
	for _, n := range []int64{1, cs - 1, cs, cs + 1, 255 * cs, 256*cs - 1, 256 * cs, 256*cs + 1, 512*cs + 3, 1000 * cs} {
		c := s.CipherSize(n)
		if got, err := s.PlainSize(c); err != nil || got != n {
			t.Errorf("PlainSize(CipherSize(%d) = %d) = %d, %v", n, c, got, err)
		}
		last := uint64((n - 1) / cs)
		if end := s.ChunkOffset(last) + (n - int64(last)*cs) + int64(s.Overhead()); end != c {
			t.Errorf("size %d: last chunk ends at %d, CipherSize %d", n, end, c)
		}
	}
	if s.ChunkOffset(256) != s.TagBlockOffset(1)+TagBlockSize || s.TagBlockOffset(1) != s.ChunkOffset(255)+int64(s.CipherChunkSize()) {
		t.Error("group 1 does not follow group 0")
	}
	full := s.CipherSize(256 * cs)
	if got, err := s.PlainSize(full + 48); err != nil || got != 256*cs {
		t.Errorf("cut inside tag block 1: %d, %v", got, err)
	}
	if _, err := s.PlainSize(full + TagBlockSize + 5); !errors.Is(err, ErrTruncated) {
		t.Errorf("cut inside a chunk's nonce: %v", err)
	}
	if s.MaxPlainSize() <= 0 || s.CipherSize(s.MaxPlainSize()) < 0 {
		t.Error("MaxPlainSize overflows")
	}
}

// TestRootsHeader: size, gen and root round-trip under the MAC in a roots
// suite, a bound suite without roots still refuses them, and DIRTY is a
// roots flag only.
func TestRootsHeader(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	r, _ := NewRootsSuite(AES256GCM, MinChunk, key, key)
	b, _ := NewBoundSuite(AES256GCM, MinChunk, key, key)
	h := Header{Flags: FlagDirty, Size: 12345, Gen: 99}
	h.FileID[3], h.Root[0], h.Root[15] = 1, 2, 3
	got, err := r.ParseHeader(r.MarshalHeader(h))
	if err != nil || got != h {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := b.ParseHeader(r.MarshalHeader(h)); !errors.Is(err, ErrBadHeader) {
		t.Errorf("bound suite without roots parses a roots header: %v", err)
	}
	h.Flags = FlagSparse
	if _, err := r.ParseHeader(r.MarshalHeader(h)); !errors.Is(err, ErrBadHeader) {
		t.Errorf("roots suite accepts SPARSE: %v", err)
	}
}
