package fresh

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"io"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
)

type freshVectors struct {
	Description string
	MasterKey   vectortest.Hex
	Label       string
	Key         vectortest.Hex
	Manifest    vectortest.Hex // the file of the manifest below
	Epoch       vectortest.Hex // the file of the epoch below, committing to Manifest
	Bucket      vectortest.Hex // bucket BucketOf(DirID) holding Manifest alone (ManifestBuckets)
	DeviceID    vectortest.Hex
	DirID       vectortest.Hex
}

// vectorFiles builds the manifest and epoch of the vectors from r.
func vectorFiles(t *testing.T, k *Keyed, dev, dir [IDSize]byte, r io.Reader) (*Manifest, *Epoch) {
	id := func() [IDSize]byte { return [IDSize]byte(vectortest.Bytes(t, r, IDSize)) }
	other := id()
	m := &Manifest{Device: dev, DirID: dir, Counter: 7, Records: []Record{
		{Name: "QUJDREVGR0hJSktMTU5PUA", Kind: KindFile, ObjectID: id(), Gen: 3, Xattrs: id(), Stamp: 7,
			Over: []Stamp{{Device: other, Counter: 12}}},
		{Name: "UVJTVFVWV1hZWmFiY2RlZg", Kind: KindDir, ObjectID: id(), Stamp: 2},
		{Name: "encryptfs.long.abc", Kind: KindDeleted, Stamp: 5},
	}}
	mf, err := k.MarshalManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	e := &Epoch{Device: dev, Counter: 7, Manifests: []EpochEntry{{DirID: dir, Counter: 7, Hash: Hash(mf)}}}
	return m, e
}

func generateFreshVectors(t *testing.T) freshVectors {
	master := vectortest.MasterKey()
	key, err := DeriveKey(master)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := New(key)
	r := vectortest.Rand("fresh vectors")
	dev := [IDSize]byte(vectortest.Bytes(t, r, IDSize))
	dir := [IDSize]byte(vectortest.Bytes(t, r, IDSize))
	m, e := vectorFiles(t, k, dev, dir, r)
	mf, _ := k.MarshalManifest(m)
	ef, err := k.MarshalEpoch(e)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := MarshalBucket(BucketOf(dir), []BucketEntry{{DirID: dir, File: mf}})
	if err != nil {
		t.Fatal(err)
	}
	return freshVectors{
		Description: "Key = HKDF-SHA256(MasterKey, salt = empty, info = Label); each file ends in HMAC-SHA256(Key, domain ‖ body), domain \"encryptfs v2 manifest\\x00\" or \"encryptfs v2 epoch\\x00\" (docs/format.md §15)",
		MasterKey:   master, Label: Label, Key: key, Manifest: mf, Epoch: ef, DeviceID: dev[:], DirID: dir[:], Bucket: bf,
	}
}

// TestVectors checks testdata/vectors/fresh.json (rewrite it with -update):
// the key, the MACs recomputed from their definition with crypto/hmac
// alone, and that both files parse back to what made them.
func TestVectors(t *testing.T) {
	var file freshVectors
	vectortest.Check(t, "fresh.json", generateFreshVectors(t), &file)
	key, err := DeriveKey(file.MasterKey)
	if err != nil || !bytes.Equal(key, file.Key) {
		t.Fatalf("key: %x, %v; want %x", key, err, file.Key)
	}
	for _, f := range []struct {
		domain string
		b      []byte
	}{{"encryptfs v2 manifest\x00", file.Manifest}, {"encryptfs v2 epoch\x00", file.Epoch}} {
		body, tag := f.b[:len(f.b)-MACSize], f.b[len(f.b)-MACSize:]
		h := hmac.New(sha256.New, file.Key)
		h.Write([]byte(f.domain))
		h.Write(body)
		if !bytes.Equal(h.Sum(nil), tag) {
			t.Errorf("%q: MAC does not follow its definition", f.domain)
		}
	}
	k, _ := New(file.Key)
	m, err := k.ParseManifest(file.Manifest)
	if err != nil || m.Counter != 7 || len(m.Records) != 3 || m.Records[0].Over[0].Counter != 12 || !bytes.Equal(m.DirID[:], file.DirID) {
		t.Fatalf("manifest: %+v, %v", m, err)
	}
	e, err := k.ParseEpoch(file.Epoch)
	if err != nil || e.Counter != 7 || len(e.Manifests) != 1 || e.Manifests[0].Hash != Hash(file.Manifest) {
		t.Fatalf("epoch: %+v, %v", e, err)
	}
	// The bucket, by its layout: "EFSB", version 1, one entry (the dirID
	// and the manifest's length), then the manifest byte for byte.
	want := append([]byte("EFSB\x01\x00\x00\x00\x01"), file.DirID...)
	want = append(want, byte(len(file.Manifest)>>24), byte(len(file.Manifest)>>16), byte(len(file.Manifest)>>8), byte(len(file.Manifest)))
	if want = append(want, file.Manifest...); !bytes.Equal(file.Bucket, want) {
		t.Fatalf("bucket does not follow its layout:\n%x\n%x", file.Bucket, want)
	}
	es, err := ParseBucket(file.DirID[0], file.Bucket)
	if err != nil || len(es) != 1 || !bytes.Equal(es[0].File, file.Manifest) {
		t.Fatalf("bucket: %+v, %v", es, err)
	}
}
