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

// FuzzParseHeaderRoots is FuzzParseHeader for a roots suite (size, gen,
// root and DIRTY in the header).
func FuzzParseHeaderRoots(f *testing.F) {
	s, err := NewRootsSuite(AES256GCM, MinChunk, testKey(32, 1), testKey(32, 2))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.MarshalHeader(Header{}))
	f.Add(s.MarshalHeader(Header{Flags: FlagDirty, FileID: FileID{1}, Size: 5, Gen: 7, Root: [RootSize]byte{9}}))
	f.Add(make([]byte, HeaderSizeV2))
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

// FuzzRootsPlainSize: PlainSize of any backing size never panics, and a
// size it accepts maps back to that backing size, or (a group cut inside
// its tag block) to at most a tag block less.
func FuzzRootsPlainSize(f *testing.F) {
	s, err := NewRootsSuite(AES256GCM, MinChunk, testKey(32, 1), testKey(32, 2))
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range []int64{0, 1, 127, 128, 129, 128 + 4096, 128 + 4096 + 33, s.CipherSize(256 * MinChunk), s.CipherSize(256*MinChunk) + 48} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, cipher int64) {
		if cipher < 0 {
			return
		}
		plain, err := s.PlainSize(cipher)
		if err != nil {
			return
		}
		if plain < 0 || plain > s.MaxPlainSize() {
			t.Fatalf("PlainSize(%d) = %d", cipher, plain)
		}
		back := s.CipherSize(plain)
		if plain == 0 && cipher > 0 {
			back = HeaderSizeV2 // a header-only file
		}
		if back > cipher || cipher-back > TagBlockSize {
			t.Fatalf("PlainSize(%d) = %d, CipherSize of that = %d", cipher, plain, back)
		}
	})
}
