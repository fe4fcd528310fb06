package keys

import (
	"bytes"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
)

type subkeyVector struct {
	Label string
	Key   vectortest.Hex
}

type keysVectors struct {
	Description string
	MasterKey   vectortest.Hex
	Subkeys     []subkeyVector
}

func generateKeyVectors(t *testing.T) keysVectors {
	master := vectortest.MasterKey()
	k, err := Derive(master)
	if err != nil {
		t.Fatal(err)
	}
	return keysVectors{
		Description: "HKDF-SHA256(secret = MasterKey, salt = empty, info = Label) subkeys",
		MasterKey:   master,
		Subkeys: []subkeyVector{
			{LabelContents, k.Contents},
			{LabelHeaderMAC, k.HeaderMAC},
			{LabelNames, k.Names},
			{LabelXattrNames, k.XattrNames},
			{LabelXattrValues, k.XattrValues},
			{LabelSymlinks, k.Symlinks},
			{LabelReverse, k.Reverse},
		},
	}
}

// TestVectors checks testdata/vectors/keys.json (rewrite it with -update).
func TestVectors(t *testing.T) {
	var file keysVectors
	vectortest.Check(t, "keys.json", generateKeyVectors(t), &file)
	// Decrypt direction: derive from the stored master key.
	k, err := Derive(file.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	byLabel := map[string][]byte{
		LabelContents: k.Contents, LabelHeaderMAC: k.HeaderMAC, LabelNames: k.Names,
		LabelXattrNames: k.XattrNames, LabelXattrValues: k.XattrValues,
		LabelSymlinks: k.Symlinks, LabelReverse: k.Reverse,
	}
	if len(file.Subkeys) != len(byLabel) {
		t.Fatalf("%d subkeys in the file, want %d", len(file.Subkeys), len(byLabel))
	}
	for _, v := range file.Subkeys {
		if !bytes.Equal(byLabel[v.Label], v.Key) {
			t.Errorf("subkey %q: stored %x, derived %x", v.Label, v.Key, byLabel[v.Label])
		}
	}
}
