package content

import (
	"bytes"
	"testing"
)

// FuzzParseHeader: parsing never panics, and an accepted header re-marshals
// to the same bytes.
func FuzzParseHeader(f *testing.F) {
	s, err := NewSuite(AES256GCM, MinChunk, testKey(32, 1), testKey(32, 2))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.MarshalHeader(Header{}))
	f.Add(s.MarshalHeader(Header{Flags: FlagSparse, FileID: FileID{1, 2, 3}}))
	f.Add(make([]byte, HeaderSize))
	f.Add([]byte{0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := s.ParseHeader(b)
		if err != nil {
			return
		}
		if !bytes.Equal(s.MarshalHeader(h), b) {
			t.Fatalf("header %x parsed as %+v but re-marshals differently", b, h)
		}
	})
}

// FuzzOpen: opening arbitrary bytes never panics; a chunk that opens
// re-seals (same nonce) to exactly the same bytes.
func FuzzOpen(f *testing.F) {
	const cs = MinChunk
	suites := testSuites(f, cs)
	var files []*FileCipher
	for _, s := range suites {
		fc, err := s.File(FileID{4})
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, fc)
		for _, n := range []int{1, 17, cs} {
			f.Add(uint8(len(files)-1), fc.Seal(nil, testKey(n, 3), 2, true, testKey(s.NonceSize(), 4)), uint64(2), true)
		}
	}
	f.Add(uint8(0), []byte{}, uint64(0), false)
	f.Add(uint8(1), make([]byte, 64), uint64(1), false)
	f.Fuzz(func(t *testing.T, which uint8, chunk []byte, index uint64, final bool) {
		fc := files[int(which)%len(files)]
		plain, err := fc.Open(nil, chunk, index, final)
		if err != nil {
			if len(plain) != 0 {
				t.Fatal("plaintext returned with an error")
			}
			return
		}
		again := fc.Seal(nil, plain, index, final, chunk[:fc.NonceSize()])
		if !bytes.Equal(again, chunk) {
			t.Fatalf("opened chunk does not re-seal to itself")
		}
	})
}
