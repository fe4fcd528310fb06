package meta

import (
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

type symlinkVector struct {
	DirID         vectortest.Hex
	Name          string // plaintext link name (part of the AD)
	BackingName   string // the link's backing name, for the sidecar name
	Target        string
	Blob          vectortest.Hex // nonce(24) ‖ XChaCha20-Poly1305
	BackingTarget string         // base64url(Blob) or the long marker
	SidecarName   string         // set when the blob lives in a sidecar
}

type xattrVector struct {
	ObjectID    vectortest.Hex
	Name        string
	BackingName string
	Value       vectortest.Hex
	Blob        vectortest.Hex // nonce(24) ‖ XChaCha20-Poly1305, AD = ObjectID ‖ BackingName
}

type metaVectors struct {
	Description    string
	MasterKey      vectortest.Hex
	SymlinksKey    vectortest.Hex
	XattrNamesKey  vectortest.Hex
	XattrValuesKey vectortest.Hex
	Symlinks       []symlinkVector
	Xattrs         []xattrVector
}

func generateMetaVectors(t *testing.T) metaVectors {
	k, err := keys.Derive(vectortest.MasterKey())
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSymlinks(k.Symlinks)
	if err != nil {
		t.Fatal(err)
	}
	x, err := NewXattrs(k.XattrNames, k.XattrValues)
	if err != nil {
		t.Fatal(err)
	}
	rnd := vectortest.Rand("meta vectors")
	dirID := vectortest.Bytes(t, rnd, IDSize)
	v := metaVectors{
		Description: "Symlink targets (AD = \"symlink\" ‖ DirID ‖ Name) and xattrs " +
			"(names: AES-SIV with AD = [ObjectID]; values: AD = ObjectID ‖ BackingName).",
		MasterKey:      vectortest.MasterKey(),
		SymlinksKey:    k.Symlinks,
		XattrNamesKey:  k.XattrNames,
		XattrValuesKey: k.XattrValues,
	}
	for _, tc := range []struct{ name, backing, target string }{
		{"link", "c2hvcnQtYmFja2luZy1uYW1l", "../target/file.txt"},
		{"inline-max", "aW5saW5lLW1heA", strings.Repeat("i", MaxInlineTarget)},
		{"sidecar", "c2lkZWNhcg", strings.Repeat("x", MaxInlineTarget+1)},
	} {
		blob, err := s.Seal(dirID, tc.name, tc.target, rnd)
		if err != nil {
			t.Fatal(err)
		}
		sv := symlinkVector{DirID: dirID, Name: tc.name, BackingName: tc.backing, Target: tc.target, Blob: blob}
		var sidecar bool
		sv.BackingTarget, sidecar = EncodeTarget(blob)
		if sidecar {
			sv.SidecarName = SymlinkSidecarName(tc.backing)
		}
		v.Symlinks = append(v.Symlinks, sv)
	}
	fileID := vectortest.Bytes(t, rnd, IDSize)
	for _, tc := range []struct {
		obj   []byte
		name  string
		value string
	}{
		{fileID, "user.mime_type", "text/plain"},
		{dirID, "user.mime_type", "text/plain"},
		{fileID, "user.empty", ""},
	} {
		backing, err := x.EncryptName(tc.obj, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		blob, err := x.SealValue(tc.obj, backing, []byte(tc.value), rnd)
		if err != nil {
			t.Fatal(err)
		}
		v.Xattrs = append(v.Xattrs, xattrVector{tc.obj, tc.name, backing, []byte(tc.value), blob})
	}
	return v
}

// TestVectors checks testdata/vectors/meta.json (rewrite it with -update) and
// opens every stored blob from the file's own bytes.
func TestVectors(t *testing.T) {
	var file metaVectors
	vectortest.Check(t, "meta.json", generateMetaVectors(t), &file)
	s, err := NewSymlinks(file.SymlinksKey)
	if err != nil {
		t.Fatal(err)
	}
	x, err := NewXattrs(file.XattrNamesKey, file.XattrValuesKey)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range file.Symlinks {
		blob := []byte(v.Blob)
		if v.SidecarName == "" {
			if blob, err = DecodeTarget(v.BackingTarget); err != nil {
				t.Fatalf("symlink %d: %v", i, err)
			}
		} else if v.BackingTarget != LongSymlinkMarker || v.SidecarName != SymlinkSidecarName(v.BackingName) {
			t.Errorf("symlink %d: bad sidecar layout", i)
		}
		if got, err := s.Open(v.DirID, v.Name, blob); err != nil || got != v.Target {
			t.Errorf("symlink %d: Open = %v", i, err)
		}
	}
	for i, v := range file.Xattrs {
		name, ok, err := x.DecryptName(v.ObjectID, v.BackingName)
		if err != nil || !ok || name != v.Name {
			t.Errorf("xattr %d: DecryptName = %q, %v, %v", i, name, ok, err)
		}
		value, err := x.OpenValue(v.ObjectID, v.BackingName, v.Blob)
		if err != nil || string(value) != string(v.Value) {
			t.Errorf("xattr %d: OpenValue = %q, %v", i, value, err)
		}
	}
}
