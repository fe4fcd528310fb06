package siv

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
)

// pycaVectors is testdata/vectors/siv-pyca.json, written by
// testdata/vectors/siv_pyca.py with pyca/cryptography's AESSIV (OpenSSL),
// an implementation that shares no code with this package.
type pycaVectors struct {
	Description string
	Vectors     []struct {
		Name      string
		Key       vectortest.Hex
		AD        []vectortest.Hex
		Plaintext vectortest.Hex
		Output    vectortest.Hex
	}
}

// pycaVectorCount is how many vectors siv_pyca.py writes; a shorter file
// (truncated, or a generator that lost cases) fails instead of passing on
// fewer checks.
const pycaVectorCount = 51

// TestPycaVectors: Seal gives pyca's bytes for every vector, Open returns the
// plaintext, and a flipped tag bit is refused.
func TestPycaVectors(t *testing.T) {
	data, err := os.ReadFile(vectortest.Path(t, "siv-pyca.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file pycaVectors
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) != pycaVectorCount {
		t.Fatalf("%d vectors, want %d", len(file.Vectors), pycaVectorCount)
	}
	for _, v := range file.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			s, err := New(v.Key)
			if err != nil {
				t.Fatal(err)
			}
			ad := make([][]byte, len(v.AD))
			for i, a := range v.AD {
				ad[i] = a
			}
			if got := s.Seal(nil, v.Plaintext, ad...); !bytes.Equal(got, v.Output) {
				t.Fatalf("Seal = %x\nwant   %x", got, []byte(v.Output))
			}
			got, err := s.Open(nil, v.Output, ad...)
			if err != nil || !bytes.Equal(got, v.Plaintext) {
				t.Fatalf("Open = %x, %v", got, err)
			}
			bad := bytes.Clone(v.Output)
			bad[0] ^= 1
			if _, err := s.Open(nil, bad, ad...); !errors.Is(err, ErrOpen) {
				t.Fatalf("tampered tag: err = %v", err)
			}
		})
	}
}
