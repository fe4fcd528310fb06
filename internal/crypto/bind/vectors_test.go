package bind

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

type bindVector struct {
	Name     string
	Kind     string
	ObjectID vectortest.Hex
	ParentID vectortest.Hex
	EncName  string
	Binding  vectortest.Hex
}

type bindVectors struct {
	Description string
	MasterKey   vectortest.Hex
	Label       string
	BindingKey  vectortest.Hex
	Vectors     []bindVector
}

func generateBindVectors(t *testing.T) bindVectors {
	master := vectortest.MasterKey()
	key, err := keys.DeriveBinding(master)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	r := vectortest.Rand("bind vectors")
	obj := vectortest.Bytes(t, r, IDSize)
	parent := vectortest.Bytes(t, r, IDSize)
	vaultID := vectortest.Bytes(t, r, IDSize)
	cases := []struct {
		name string
		kind Kind
		obj  []byte
		p    Place
	}{
		{"file", KindFile, obj, Place{parent, "QUJDREVGR0hJSktMTU5PUA"}},
		{"dir with the file's ID bytes", KindDir, obj, Place{parent, "QUJDREVGR0hJSktMTU5PUA"}},
		{"file renamed", KindFile, obj, Place{parent, "UVJTVFVWV1hZWmFiY2RlZg"}},
		{"file in another directory", KindFile, obj, Place{vaultID, "QUJDREVGR0hJSktMTU5PUA"}},
		{"root directory", KindDir, obj, Place{vaultID, ""}},
		{"long name", KindDir, obj, Place{parent, strings.Repeat("A", 300)}},
	}
	out := bindVectors{
		Description: "HMAC-SHA256(BindingKey, \"encryptfs v2 bind\" ‖ kind ‖ ObjectID ‖ ParentID ‖ u16 len(EncName) ‖ EncName)[0:16]; BindingKey = HKDF-SHA256(MasterKey, salt = empty, info = Label)",
		MasterKey:   master, Label: keys.LabelBinding, BindingKey: key,
	}
	for _, c := range cases {
		s := b.Sum(c.kind, c.obj, c.p)
		out.Vectors = append(out.Vectors, bindVector{c.name, string(rune(c.kind)), c.obj, c.p.ParentID, c.p.EncName, s[:]})
	}
	return out
}

// TestVectors checks testdata/vectors/bind.json (rewrite it with -update),
// and recomputes each binding from its definition with crypto/hmac alone.
func TestVectors(t *testing.T) {
	var file bindVectors
	vectortest.Check(t, "bind.json", generateBindVectors(t), &file)
	key, err := keys.DeriveBinding(file.MasterKey)
	if err != nil || !bytes.Equal(key, file.BindingKey) {
		t.Fatalf("binding key: %x, %v; want %x", key, err, file.BindingKey)
	}
	b, err := New(file.BindingKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range file.Vectors {
		m := hmac.New(sha256.New, file.BindingKey)
		m.Write([]byte("encryptfs v2 bind" + v.Kind))
		m.Write(v.ObjectID)
		m.Write(v.ParentID)
		m.Write([]byte{byte(len(v.EncName) >> 8), byte(len(v.EncName))})
		m.Write([]byte(v.EncName))
		if got := m.Sum(nil)[:Size]; !bytes.Equal(got, v.Binding) {
			t.Errorf("%s: definition gives %x, file has %x", v.Name, got, v.Binding)
		}
		var slot Binding
		copy(slot[:], v.Binding)
		p := Place{v.ParentID, v.EncName}
		if !b.Match(Kind(v.Kind[0]), v.ObjectID, p, []Binding{{}, slot}) {
			t.Errorf("%s: Match false", v.Name)
		}
	}
}
