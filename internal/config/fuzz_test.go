package config

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// FuzzParse: Parse never panics; whatever parses marshals, and re-parses to
// the same config with the same stored Params bytes.
func FuzzParse(f *testing.F) {
	k, err := kdf.Cheapest(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	for _, alg := range []content.Algorithm{content.AES256GCM, content.AES256SIV} {
		c, _, err := Create(NewParams(string(alg), 4096, k), []byte("pw"), rand.Reader)
		if err != nil {
			f.Fatal(err)
		}
		data, err := c.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	vectors, err := os.ReadFile(filepath.Join("..", "..", "testdata", "vectors", vectorsV2File))
	if err != nil {
		f.Fatal(err)
	}
	var v2 configV2Vectors
	if err := json.Unmarshal(vectors, &v2); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(v2.Config))
	if raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "vectors", vectorsEpochsFile)); err == nil {
		var ep epochVectors
		if json.Unmarshal(raw, &ep) == nil {
			f.Add([]byte(ep.Config)) // master-key epochs
		}
	}
	if v2.Bound != nil && v2.Upgraded != nil {
		f.Add([]byte(v2.Bound.Config))
		f.Add([]byte(v2.Upgraded.Config))
	}
	f.Add([]byte(`{"Params": {"FormatVersion": 2}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatalf("Marshal after Parse: %v", err)
		}
		c2, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Marshal(Parse(x))): %v\n%s", err, out)
		}
		if c2.Creator != c.Creator || !bytes.Equal(c2.rawParams, c.rawParams) || !bytes.Equal(c2.EncryptedKey, c.EncryptedKey) ||
			!bytes.Equal(c2.rawSlots, c.rawSlots) || !bytes.Equal(c2.MAC, c.MAC) || len(c2.Slots) != len(c.Slots) ||
			c2.epochs.current != c.epochs.current || !bytes.Equal(c2.epochs.sealed, c.epochs.sealed) ||
			!bytes.Equal(c2.rawSlotParams, c.rawSlotParams) || !bytes.Equal(c2.Params.VaultID, c.Params.VaultID) {
			t.Fatal("round trip changed the config")
		}
	})
}
