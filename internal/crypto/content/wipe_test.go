package content

import (
	"bytes"
	"errors"
	"testing"
)

// TestWipe: Wipe zeroes every key copy the suite holds (the contents key,
// from which per-file keys are derived, and the header MAC key), leaves the
// caller's slices alone, and makes later key use fail instead of running
// on zero keys.
func TestWipe(t *testing.T) {
	for _, alg := range Algorithms() {
		t.Run(string(alg), func(t *testing.T) {
			ck, hk := bytes.Repeat([]byte{0x11}, 32), bytes.Repeat([]byte{0x22}, 32)
			s, err := NewSuite(alg, DefaultChunkSize, ck, hk)
			if err != nil {
				t.Fatal(err)
			}
			id := FileID{1}
			fc, err := s.File(id)
			if err != nil {
				t.Fatal(err)
			}
			hdr := s.MarshalHeader(Header{FileID: id})
			s.Wipe()
			for name, k := range map[string][]byte{"contents key": s.contentsKey, "header MAC key": s.headerMACKey} {
				if len(k) != 32 || !bytes.Equal(k, make([]byte, 32)) {
					t.Errorf("%s not wiped: %x", name, k)
				}
			}
			if !bytes.Equal(ck, bytes.Repeat([]byte{0x11}, 32)) || !bytes.Equal(hk, bytes.Repeat([]byte{0x22}, 32)) {
				t.Error("Wipe cleared the caller's keys")
			}
			if _, err := s.File(id); !errors.Is(err, ErrWiped) {
				t.Errorf("File after Wipe: %v, want ErrWiped", err)
			}
			if _, err := s.ParseHeader(hdr); !errors.Is(err, ErrBadHeader) {
				t.Errorf("ParseHeader after Wipe: %v, want ErrBadHeader", err)
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Error("MarshalHeader after Wipe did not panic")
					}
				}()
				s.MarshalHeader(Header{FileID: id})
			}()
			// A cipher built before Wipe keeps working (its key schedule is
			// the standard library's, out of the package's reach).
			nonce := make([]byte, fc.NonceSize())
			if _, err := fc.Open(nil, fc.Seal(nil, []byte("x"), 0, true, nonce), 0, true); err != nil {
				t.Errorf("FileCipher after Wipe: %v", err)
			}
		})
	}
}
