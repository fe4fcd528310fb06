package kdf

import (
	"bytes"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
)

type kdfVector struct {
	Params   Params
	Password string
	Key      vectortest.Hex
}

type kdfVectors struct {
	Description string
	Vectors     []kdfVector
}

func generateKDFVectors(t *testing.T) kdfVectors {
	rnd := vectortest.Rand("kdf vectors")
	v := kdfVectors{Description: "Argon2id key-encryption keys (32 bytes); Salt is standard base64 as in encryptfs.conf"}
	cheap, err := Cheapest(rnd)
	if err != nil {
		t.Fatal(err)
	}
	two, err := New(rnd, 2, MinMemoryKiB, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p  Params
		pw string
	}{{cheap, "password"}, {cheap, ""}, {two, "correct horse battery staple"}} {
		key, err := tc.p.Key([]byte(tc.pw))
		if err != nil {
			t.Fatal(err)
		}
		v.Vectors = append(v.Vectors, kdfVector{tc.p, tc.pw, key})
	}
	return v
}

// TestVectors checks testdata/vectors/kdf.json (rewrite it with -update).
func TestVectors(t *testing.T) {
	var file kdfVectors
	vectortest.Check(t, "kdf.json", generateKDFVectors(t), &file)
	for i, v := range file.Vectors {
		key, err := v.Params.Key([]byte(v.Password))
		if err != nil || !bytes.Equal(key, v.Key) {
			t.Errorf("vector %d: Key = %x, %v", i, key, err)
		}
	}
}
