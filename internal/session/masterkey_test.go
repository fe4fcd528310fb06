package session

import (
	"bytes"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/keyslot"
)

func TestMasterKeyAccessor(t *testing.T) {
	dir := t.TempDir()
	p := config.NewParamsV2(string(AES256GCM), DefaultChunkSize)
	s, master, err := CreateWith(dir, []keyslot.NewSlot{{Type: config.SlotKeyfile, Keyfile: bytes.Repeat([]byte{7}, 32)}}, CreateOptions{Params: p})
	if err != nil {
		t.Fatal(err)
	}
	got := s.MasterKey()
	if !bytes.Equal(got, master) {
		t.Fatal("MasterKey is not the vault's key")
	}
	got[0] ^= 1
	if again := s.MasterKey(); !bytes.Equal(again, master) {
		t.Fatal("MasterKey returned the session's own copy")
	}
	s.Close()
	if s.MasterKey() != nil {
		t.Fatal("MasterKey after Close")
	}
	s2, err := New(dir, p, master, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.MasterKey() != nil {
		t.Fatal("MasterKey of a session without a keyring")
	}
}
