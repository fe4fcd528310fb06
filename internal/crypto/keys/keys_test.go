package keys

import (
	"bytes"
	"errors"
	"testing"
)

func TestDeriveSizesAndDistinct(t *testing.T) {
	master := bytes.Repeat([]byte{0x42}, MasterKeySize)
	k, err := Derive(master)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		key  []byte
		size int
	}{
		{"contents", k.Contents, 32},
		{"header mac", k.HeaderMAC, 32},
		{"names", k.Names, 64},
		{"xattr names", k.XattrNames, 64},
		{"xattr values", k.XattrValues, 32},
		{"symlinks", k.Symlinks, 32},
		{"reverse", k.Reverse, 32},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.key) != tt.size {
				t.Fatalf("len = %d, want %d", len(tt.key), tt.size)
			}
			prefix := string(tt.key[:32])
			if other, dup := seen[prefix]; dup {
				t.Fatalf("same bytes as %s", other)
			}
			seen[prefix] = tt.name
		})
	}
	k2, err := Derive(master)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k.Names, k2.Names) {
		t.Fatal("Derive is not deterministic")
	}
	other := bytes.Repeat([]byte{0x43}, MasterKeySize)
	k3, err := Derive(other)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(k.Contents, k3.Contents) {
		t.Fatal("different master keys gave the same subkey")
	}
}

func TestDeriveRejectsBadSize(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := Derive(make([]byte, n)); !errors.Is(err, ErrMasterKey) {
			t.Errorf("len %d: err = %v, want ErrMasterKey", n, err)
		}
	}
}

func TestWipe(t *testing.T) {
	k, err := Derive(bytes.Repeat([]byte{1}, MasterKeySize))
	if err != nil {
		t.Fatal(err)
	}
	k.Wipe()
	for _, b := range [][]byte{k.Contents, k.HeaderMAC, k.Names, k.XattrNames, k.XattrValues, k.Symlinks, k.Reverse} {
		if !bytes.Equal(b, make([]byte, len(b))) {
			t.Fatal("key not zeroed")
		}
	}
	var nilKeys *Keys
	nilKeys.Wipe() // must not panic
}
