package siv

import (
	"bytes"
	"testing"
)

// FuzzOpen: opening arbitrary bytes never panics, returns no plaintext on
// failure, and an accepted ciphertext re-seals to itself (SIV is
// deterministic).
func FuzzOpen(f *testing.F) {
	s, err := New(make([]byte, 64))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.Seal(nil, []byte("hello"), []byte("ad")), []byte("ad"))
	f.Add(s.Seal(nil, nil, []byte{}), []byte{})
	f.Add(s.Seal(nil, bytes.Repeat([]byte{7}, 300), []byte("x")), []byte("x"))
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, ciphertext, ad []byte) {
		plain, err := s.Open(nil, ciphertext, ad)
		if err != nil {
			if plain != nil {
				t.Fatal("plaintext returned with an error")
			}
			return
		}
		if again := s.Seal(nil, plain, ad); !bytes.Equal(again, ciphertext) {
			t.Fatal("accepted ciphertext does not re-seal to itself")
		}
	})
}

// FuzzSealOpen: every plaintext and AD round-trips, also in place.
func FuzzSealOpen(f *testing.F) {
	s, err := New(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("plaintext"), []byte("ad"), []byte("nonce"))
	f.Add([]byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, plain, ad, nonce []byte) {
		sealed := s.Seal(nil, plain, ad, nonce)
		got, err := s.Open(sealed[Overhead:Overhead], sealed, ad, nonce)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip failed: %v", err)
		}
	})
}
