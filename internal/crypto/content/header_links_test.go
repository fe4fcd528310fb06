package content

import (
	"bytes"
	"errors"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
)

// TestHeaderV2Links: a v2 header may carry FlagLinks (its bindings are in
// the links file) only with its slots zero; a v1 header refuses it.
func TestHeaderV2Links(t *testing.T) {
	s, err := NewBoundSuite(AES256GCM, DefaultChunkSize, bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32))
	if err != nil {
		t.Fatal(err)
	}
	h := Header{Flags: FlagLinks | FlagSparse}
	h.FileID[0] = 9
	got, err := s.ParseHeader(s.MarshalHeader(h))
	if err != nil || got.Flags != h.Flags {
		t.Fatalf("LINKS header: %+v, %v", got, err)
	}
	h.Bindings[1] = bind.Binding{5}
	if _, err := s.ParseHeader(s.MarshalHeader(h)); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("LINKS with a binding in a slot: %v, want ErrBadHeader", err)
	}
	v1, err := NewSuite(AES256GCM, DefaultChunkSize, bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32))
	if err != nil {
		t.Fatal(err)
	}
	raw := v1.MarshalHeader(Header{Flags: FlagLinks})
	if _, err := v1.ParseHeader(raw); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("v1 header with LINKS: %v, want ErrBadHeader", err)
	}
}
