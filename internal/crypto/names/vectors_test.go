package names

import (
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

type nameVector struct {
	DirID          vectortest.Hex
	Name           string
	EncName        string // base64url-nopad(AES-SIV(NamesKey, [DirID], Name))
	Backing        string // the backing directory entry
	Long           bool
	Sidecar        string // long names: sidecar file name
	SidecarContent string // long names: its exact content (EncName)
}

type namesVectors struct {
	Description string
	MasterKey   vectortest.Hex
	NamesKey    vectortest.Hex
	Names       []nameVector
}

func generateNameVectors(t *testing.T) namesVectors {
	k, err := keys.Derive(vectortest.MasterKey())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(k.Names)
	if err != nil {
		t.Fatal(err)
	}
	rnd := vectortest.Rand("names vectors")
	dir1 := vectortest.Bytes(t, rnd, DirIDSize)
	dir2 := vectortest.Bytes(t, rnd, DirIDSize)
	v := namesVectors{
		Description: "File names: AES-SIV-512 with AD = [DirID], base64url without padding; " +
			"names over 255 characters become encryptfs.long.<base64url(SHA-256(EncName))> plus a .name sidecar.",
		MasterKey: vectortest.MasterKey(),
		NamesKey:  k.Names,
	}
	for _, tc := range []struct {
		dir  []byte
		name string
	}{
		{dir1, "a"},
		{dir1, "hello.txt"},
		{dir2, "hello.txt"},
		{dir1, "Ünïcödé name with spaces"},
		{dir1, strings.Repeat("s", MaxShortNameLen)},     // 159 bytes: longest short name
		{dir1, strings.Repeat("l", MaxShortNameLen+1)},   // 160 bytes: shortest long name
		{dir1, strings.Repeat("m", MaxNameLen)},          // 255 bytes
		{dir2, strings.Repeat("m", MaxNameLen-1) + "\n"}, // any byte but '/' and NUL
	} {
		enc, err := c.Encrypt(tc.dir, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		nv := nameVector{DirID: tc.dir, Name: tc.name, EncName: enc}
		nv.Backing, nv.Long = Backing(enc)
		if nv.Long {
			nv.Sidecar, nv.SidecarContent = SidecarName(nv.Backing), enc
		}
		v.Names = append(v.Names, nv)
	}
	return v
}

// TestVectors checks testdata/vectors/names.json (rewrite it with -update)
// and decrypts every stored name from the file's own bytes.
func TestVectors(t *testing.T) {
	var file namesVectors
	vectortest.Check(t, "names.json", generateNameVectors(t), &file)
	c, err := New(file.NamesKey)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range file.Names {
		enc := v.EncName
		if v.Long {
			if !IsLongName(v.Backing) || v.Sidecar != SidecarName(v.Backing) {
				t.Errorf("name %d: bad long-name layout", i)
			}
			if enc, err = CheckSidecar(v.Backing, []byte(v.SidecarContent)); err != nil {
				t.Errorf("name %d: %v", i, err)
			}
		}
		got, err := c.Decrypt(v.DirID, enc)
		if err != nil || got != v.Name {
			t.Errorf("name %d: Decrypt = %q, %v", i, got, err)
		}
	}
}
