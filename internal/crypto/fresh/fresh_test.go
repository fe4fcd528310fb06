package fresh

import (
	"bytes"
	"errors"
	"testing"
)

func testKeyed(t testing.TB, b byte) *Keyed {
	k, err := New(bytes.Repeat([]byte{b}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func sampleFiles(t testing.TB, k *Keyed) (manifest, epoch []byte) {
	m := &Manifest{Counter: 3, Records: []Record{
		{Name: "b", Kind: KindDeleted, Stamp: 2},
		{Name: "a", Kind: KindFile, Gen: 1, Stamp: 3, Over: []Stamp{{Counter: 1}}},
	}}
	mf, err := k.MarshalManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := k.MarshalEpoch(&Epoch{Counter: 3, Manifests: []EpochEntry{{Counter: 3, Hash: Hash(mf)}}})
	if err != nil {
		t.Fatal(err)
	}
	return mf, ef
}

// TestTamper: every byte flipped, the file cut short or extended, the
// other key, and a manifest read as an epoch (or the reverse) all fail.
func TestTamper(t *testing.T) {
	k := testKeyed(t, 1)
	mf, ef := sampleFiles(t, k)
	if m, err := k.ParseManifest(mf); err != nil || m.Records[0].Name != "a" {
		t.Fatalf("round trip: %+v, %v (records must come back sorted)", m, err)
	}
	for _, f := range [][]byte{mf, ef} {
		for i := range f {
			c := bytes.Clone(f)
			c[i] ^= 1
			_, err1 := k.ParseManifest(c)
			_, err2 := k.ParseEpoch(c)
			if err1 == nil || err2 == nil {
				t.Fatalf("byte %d flipped: parsed", i)
			}
		}
		for _, c := range [][]byte{f[:len(f)-1], append(bytes.Clone(f), 0), nil} {
			if _, err := k.ParseManifest(c); err == nil {
				t.Fatal("cut or extended manifest parsed")
			}
		}
	}
	if _, err := k.ParseEpoch(mf); !errors.Is(err, ErrTampered) {
		t.Fatalf("manifest as epoch: %v", err)
	}
	if _, err := k.ParseManifest(ef); !errors.Is(err, ErrTampered) {
		t.Fatalf("epoch as manifest: %v", err)
	}
	if _, err := testKeyed(t, 2).ParseManifest(mf); !errors.Is(err, ErrTampered) {
		t.Fatalf("another key: %v", err)
	}
	if _, err := k.MarshalManifest(&Manifest{Records: []Record{{Name: "a", Kind: KindFile}, {Name: "a", Kind: KindFile}}}); err == nil {
		t.Fatal("two records of one name marshalled")
	}
}

func TestIsName(t *testing.T) {
	id := EncodeID(bytes.Repeat([]byte{0xfb}, IDSize))
	for n, want := range map[string]bool{
		EpochPrefix + id: true, ManifestsPrefix + id: true, ManifestsPrefix + id + TempSuffix: true,
		EpochPrefix + "x": false, "encryptfs.conf": false, EpochPrefix + id + "x": false,
	} {
		if IsName(n) != want {
			t.Errorf("IsName(%q) = %v", n, !want)
		}
	}
}

// FuzzParse: the parsers never panic, and what parses (under the key that
// MAC'd it) marshals back to the same bytes.
func FuzzParse(f *testing.F) {
	k := testKeyed(f, 1)
	mf, ef := sampleFiles(f, k)
	f.Add(mf)
	f.Add(ef)
	f.Fuzz(func(t *testing.T, b []byte) {
		// A MAC'd copy of the body, so that parsing gets past the MAC.
		if len(b) >= MACSize {
			b = b[:len(b)-MACSize]
		}
		for _, domain := range []string{manifestDomain, epochDomain} {
			c := k.seal(domain, bytes.Clone(b))
			if m, err := k.ParseManifest(c); err == nil {
				if again, err := k.MarshalManifest(m); err != nil || !bytes.Equal(again, c) {
					t.Fatalf("manifest round trip: %v", err)
				}
			}
			if e, err := k.ParseEpoch(c); err == nil {
				if again, err := k.MarshalEpoch(e); err != nil || !bytes.Equal(again, c) {
					t.Fatalf("epoch round trip: %v", err)
				}
			}
		}
	})
}
