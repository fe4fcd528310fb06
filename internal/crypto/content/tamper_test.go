package content

import (
	"bytes"
	"errors"
	"testing"
)

// TestTamperChunk: every single-byte change of a sealed chunk (nonce, body,
// tag), and every wrong index, final flag, file or key, fails with
// ErrCorruptChunk and returns no plaintext.
func TestTamperChunk(t *testing.T) {
	const cs = MinChunk
	for _, s := range testSuites(t, cs) {
		t.Run(string(s.Algorithm()), func(t *testing.T) {
			f, err := s.File(FileID{1, 2, 3})
			if err != nil {
				t.Fatal(err)
			}
			for _, size := range []int{1, 100, cs} {
				plain := testKey(size, 5)
				chunk := f.Seal(nil, plain, 3, false, testKey(s.NonceSize(), 9))
				for i := range chunk {
					for _, flip := range []byte{0x01, 0x80, 0xff} {
						bad := bytes.Clone(chunk)
						bad[i] ^= flip
						expectCorrupt(t, f, bad, 3, false, "flip byte %d of %d by %#x", i, len(chunk), flip)
					}
				}
				expectCorrupt(t, f, chunk, 4, false, "wrong index")
				expectCorrupt(t, f, chunk, 3+1<<32, false, "index differing in the high word")
				expectCorrupt(t, f, chunk, 3, true, "wrong final flag")
				expectCorrupt(t, f, chunk[:len(chunk)-1], 3, false, "one byte short")
				expectCorrupt(t, f, append(bytes.Clone(chunk), 0), 3, false, "one byte more")
				expectCorrupt(t, f, chunk[:s.Overhead()], 3, false, "no plaintext")
				expectCorrupt(t, f, nil, 3, false, "empty")
				expectCorrupt(t, f, make([]byte, len(chunk)), 3, false, "all zero (a hole is not a valid chunk)")

				other, err := s.File(FileID{1, 2, 4})
				if err != nil {
					t.Fatal(err)
				}
				expectCorrupt(t, other, chunk, 3, false, "chunk moved to another file")
				otherVault, err := NewSuite(s.Algorithm(), cs, testKey(32, 100), testKey(32, 2))
				if err != nil {
					t.Fatal(err)
				}
				fv, err := otherVault.File(FileID{1, 2, 3})
				if err != nil {
					t.Fatal(err)
				}
				expectCorrupt(t, fv, chunk, 3, false, "same file ID under another contents key")
			}
			// A chunk longer than the suite's chunk size is refused before
			// any crypto: a FileCipher never opens more than ChunkSize bytes.
			big := make([]byte, cs+s.Overhead()+1)
			expectCorrupt(t, f, big, 0, true, "oversized chunk")
		})
	}
}

func expectCorrupt(t *testing.T, f *FileCipher, chunk []byte, index uint64, final bool, format string, args ...any) {
	t.Helper()
	dst := []byte("keep")
	got, err := f.Open(dst, chunk, index, final)
	if !errors.Is(err, ErrCorruptChunk) {
		t.Fatalf(format+": err = %v, want ErrCorruptChunk", append(args, err)...)
	}
	if !bytes.Equal(got, []byte("keep")) {
		t.Fatalf(format+": Open appended %d bytes on failure", append(args, len(got)-4)...)
	}
}

// TestTamperHeader: every single-byte change of a header fails.
func TestTamperHeader(t *testing.T) {
	s, err := NewSuite(AES256GCM, MinChunk, testKey(32, 1), testKey(32, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, flags := range []uint16{0, FlagSparse} {
		h := s.MarshalHeader(Header{Flags: flags, FileID: FileID{7, 7, 7}})
		for i := range h {
			for _, flip := range []byte{0x01, 0x80} {
				bad := bytes.Clone(h)
				bad[i] ^= flip
				if _, err := s.ParseHeader(bad); !errors.Is(err, ErrBadHeader) {
					t.Fatalf("flags %d: flip byte %d by %#x: err = %v", flags, i, flip, err)
				}
			}
		}
	}
	// Setting SPARSE on a header that lacks it needs the MAC key.
	h := s.MarshalHeader(Header{FileID: FileID{1}})
	h[3] |= FlagSparse
	if _, err := s.ParseHeader(h); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("forged SPARSE flag: err = %v", err)
	}
}
