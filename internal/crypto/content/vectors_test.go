package content

import (
	"bytes"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

type headerVector struct {
	Flags  uint16
	FileID vectortest.Hex
	Header vectortest.Hex
}

type chunkVector struct {
	Algorithm Algorithm
	FileID    vectortest.Hex
	Index     uint64
	Final     bool
	Nonce     vectortest.Hex
	Plaintext vectortest.Hex
	Chunk     vectortest.Hex // nonce ‖ ciphertext ‖ tag (SIV: nonce ‖ V ‖ C)
}

type sizeVector struct {
	Algorithm  Algorithm
	ChunkSize  int
	PlainSize  int64
	CipherSize int64
}

type contentVectors struct {
	Description  string
	MasterKey    vectortest.Hex
	ContentsKey  vectortest.Hex
	HeaderMACKey vectortest.Hex
	ChunkSize    int
	Headers      []headerVector
	Chunks       []chunkVector
	Sizes        []sizeVector
}

// vectorChunkSize keeps the vector file small.
const vectorChunkSize = MinChunk

func generateContentVectors(t *testing.T) contentVectors {
	k, err := keys.Derive(vectortest.MasterKey())
	if err != nil {
		t.Fatal(err)
	}
	v := contentVectors{
		Description: "File headers, chunks (AD = FileID ‖ uint64 BE Index ‖ Final) and sizes. " +
			"Per-file key = HKDF-SHA256(ContentsKey, salt = FileID, info = \"encryptfs v1 file key \" + Algorithm).",
		MasterKey:    vectortest.MasterKey(),
		ContentsKey:  k.Contents,
		HeaderMACKey: k.HeaderMAC,
		ChunkSize:    vectorChunkSize,
	}
	rnd := vectortest.Rand("content vectors")
	suite, err := NewSuite(AES256GCM, vectorChunkSize, k.Contents, k.HeaderMAC)
	if err != nil {
		t.Fatal(err)
	}
	for _, flags := range []uint16{0, FlagSparse} {
		var id FileID
		copy(id[:], vectortest.Bytes(t, rnd, FileIDSize))
		v.Headers = append(v.Headers, headerVector{flags, id[:], suite.MarshalHeader(Header{Flags: flags, FileID: id})})
	}
	cases := []struct {
		index uint64
		final bool
		size  int
	}{
		{0, true, 1},
		{0, false, vectorChunkSize},
		{1, true, 100},
		{7, false, vectorChunkSize},
		{1<<32 + 1, true, 33},
	}
	for _, alg := range Algorithms() {
		s, err := NewSuite(alg, vectorChunkSize, k.Contents, k.HeaderMAC)
		if err != nil {
			t.Fatal(err)
		}
		var id FileID
		copy(id[:], vectortest.Bytes(t, rnd, FileIDSize))
		f, err := s.File(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			nonce := vectortest.Bytes(t, rnd, s.NonceSize())
			plain := vectortest.Bytes(t, rnd, c.size)
			v.Chunks = append(v.Chunks, chunkVector{
				Algorithm: alg, FileID: id[:], Index: c.index, Final: c.final,
				Nonce: nonce, Plaintext: plain, Chunk: f.Seal(nil, plain, c.index, c.final, nonce),
			})
		}
		for _, cs := range []int{MinChunk, 64 << 10} { // pinned: vectors must not follow the default
			s, err := NewSuite(alg, cs, k.Contents, k.HeaderMAC)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int64{0, 1, int64(cs) - 1, int64(cs), int64(cs) + 1, 10*int64(cs) + 5, 1 << 30} {
				v.Sizes = append(v.Sizes, sizeVector{alg, cs, n, s.CipherSize(n)})
			}
		}
	}
	return v
}

// TestVectors checks testdata/vectors/content.json (rewrite it with -update)
// and opens every stored chunk and header from the file's own bytes.
func TestVectors(t *testing.T) {
	var file contentVectors
	vectortest.Check(t, "content.json", generateContentVectors(t), &file)
	suite, err := NewSuite(AES256GCM, file.ChunkSize, file.ContentsKey, file.HeaderMACKey)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range file.Headers {
		got, err := suite.ParseHeader(h.Header)
		if err != nil || got.Flags != h.Flags || !bytes.Equal(got.FileID[:], h.FileID) {
			t.Errorf("header %d: %+v, %v", i, got, err)
		}
	}
	for i, c := range file.Chunks {
		s, err := NewSuite(c.Algorithm, file.ChunkSize, file.ContentsKey, file.HeaderMACKey)
		if err != nil {
			t.Fatal(err)
		}
		f, err := s.File(FileID(c.FileID))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := f.Open(nil, c.Chunk, c.Index, c.Final)
		if err != nil || !bytes.Equal(plain, c.Plaintext) {
			t.Errorf("chunk %d (%s index %d): Open = %v", i, c.Algorithm, c.Index, err)
		}
		if _, err := f.Open(nil, c.Chunk, c.Index, !c.Final); err == nil {
			t.Errorf("chunk %d opens with the wrong final flag", i)
		}
	}
	for _, sz := range file.Sizes {
		s, err := NewSuite(sz.Algorithm, sz.ChunkSize, file.ContentsKey, file.HeaderMACKey)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.PlainSize(sz.CipherSize); err != nil || got != sz.PlainSize {
			t.Errorf("%s/%d: PlainSize(%d) = %d, %v, want %d", sz.Algorithm, sz.ChunkSize, sz.CipherSize, got, err, sz.PlainSize)
		}
	}
}
