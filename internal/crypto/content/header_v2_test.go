package content

import (
	"bytes"
	"errors"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

type headerV2Vector struct {
	Name     string
	Flags    uint16
	FileID   vectortest.Hex
	Bindings []vectortest.Hex
	Header   vectortest.Hex
}

type headerV2Vectors struct {
	Description  string
	MasterKey    vectortest.Hex
	HeaderMACKey vectortest.Hex
	Headers      []headerV2Vector
}

func generateHeaderV2Vectors(t *testing.T) headerV2Vectors {
	k, err := keys.Derive(vectortest.MasterKey())
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewBoundSuite(AES256GCM, DefaultChunkSize, k.Contents, k.HeaderMAC)
	if err != nil {
		t.Fatal(err)
	}
	rnd := vectortest.Rand("header v2 vectors")
	out := headerV2Vectors{
		Description:  "v2 file header (128 bytes): version 2, flags, reserved epoch, fileID, reserved size/gen/root, 3 binding slots, reserved, HMAC-SHA256(HeaderMACKey, bytes 0..111)[0:16]",
		MasterKey:    vectortest.MasterKey(),
		HeaderMACKey: k.HeaderMAC,
	}
	for _, c := range []struct {
		name  string
		flags uint16
		slots int
	}{{"one binding", 0, 1}, {"renaming: two bindings", 0, 2}, {"sparse, three", FlagSparse, 3}, {"no binding", 0, 0}} {
		var h Header
		h.Flags = c.flags
		copy(h.FileID[:], vectortest.Bytes(t, rnd, FileIDSize))
		v := headerV2Vector{Name: c.name, Flags: c.flags, FileID: h.FileID[:]}
		for i := range c.slots {
			copy(h.Bindings[i][:], vectortest.Bytes(t, rnd, bind.Size))
			v.Bindings = append(v.Bindings, h.Bindings[i][:])
		}
		v.Header = s.MarshalHeader(h)
		out.Headers = append(out.Headers, v)
	}
	return out
}

// TestHeaderV2Vectors checks testdata/vectors/header-v2.json and parses
// every stored header back.
func TestHeaderV2Vectors(t *testing.T) {
	var file headerV2Vectors
	vectortest.Check(t, "header-v2.json", generateHeaderV2Vectors(t), &file)
	s, err := NewBoundSuite(AES256GCM, DefaultChunkSize, make([]byte, 32), file.HeaderMACKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range file.Headers {
		h, err := s.ParseHeader(v.Header)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if h.Flags != v.Flags || !bytes.Equal(h.FileID[:], v.FileID) {
			t.Errorf("%s: parsed %+v", v.Name, h)
		}
		for i, b := range v.Bindings {
			if !bytes.Equal(h.Bindings[i][:], b) {
				t.Errorf("%s: slot %d = %x, want %x", v.Name, i, h.Bindings[i], b)
			}
		}
	}
}

// TestHeaderV2Tamper: every byte of a v2 header is under the MAC, the
// reserved fields included, and a v1 suite refuses a v2 header and back.
func TestHeaderV2Tamper(t *testing.T) {
	k := bytes.Repeat([]byte{9}, 32)
	s, _ := NewBoundSuite(AES256GCM, DefaultChunkSize, k, k)
	v1, _ := NewSuite(AES256GCM, DefaultChunkSize, k, k)
	var h Header
	h.FileID[0], h.Bindings[1][0] = 1, 2
	b := s.MarshalHeader(h)
	if s.HeaderSize() != HeaderSizeV2 || len(b) != HeaderSizeV2 || v1.HeaderSize() != HeaderSize {
		t.Fatalf("sizes %d %d %d", s.HeaderSize(), len(b), v1.HeaderSize())
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x40
		if _, err := s.ParseHeader(c); !errors.Is(err, ErrBadHeader) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	if _, err := v1.ParseHeader(b); !errors.Is(err, ErrBadHeader) {
		t.Errorf("v1 suite parses a v2 header: %v", err)
	}
	if _, err := s.ParseHeader(v1.MarshalHeader(h)); !errors.Is(err, ErrBadHeader) {
		t.Errorf("bound suite parses a v1 header: %v", err)
	}
	if ps, _ := s.PlainSize(HeaderSizeV2); ps != 0 || s.CipherSize(1) != HeaderSizeV2+1+int64(s.Overhead()) {
		t.Errorf("sizes: PlainSize(header) = %d, CipherSize(1) = %d", ps, s.CipherSize(1))
	}
}
