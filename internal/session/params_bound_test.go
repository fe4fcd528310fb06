package session

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/tree"
)

var testVaultID = bytes.Repeat([]byte{0x5e}, config.VaultIDSize)

// newBoundVault creates a format-2 vault whose config has BoundLocations.
func newBoundVault(t *testing.T) (string, []byte) {
	t.Helper()
	p, err := config.NewParamsV2(string(AES256GCM), DefaultChunkSize).WithBoundLocations(testVaultID)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, master, err := CreateWith(dir, []keyslot.NewSlot{{Type: config.SlotPassword, Label: "pw", Password: password, KDF: cheapKDF(t)}},
		CreateOptions{Params: p})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Tree().Bound() || !s.Engine().Bound() {
		t.Fatal("CreateWith of a BoundLocations config made an unbound session")
	}
	s.Close()
	return dir, master
}

// TestParamsTurnBindingOn: every door opens a vault whose config has
// BoundLocations bound (the session maps the flag, Options.withParams),
// and its root's ID file is the v2 form.
func TestParamsTurnBindingOn(t *testing.T) {
	dir, master := newBoundVault(t)
	if fi, err := os.Stat(filepath.Join(dir, names.DirIDFile)); err != nil || fi.Size() != tree.DirIDFileSizeV2 {
		t.Fatalf("root ID file: %v %v", fi, err)
	}
	opens := map[string]func() (*Session, error){
		"Open": func() (*Session, error) { return Open(dir, password, Options{}) },
		"OpenWith": func() (*Session, error) {
			return OpenWith(dir, keyslot.Credentials{Password: pwFunc(password)}, Options{})
		},
		"OpenWithMasterKey": func() (*Session, error) { return OpenWithMasterKey(dir, master, Options{}) },
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			s, err := open()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !s.Tree().Bound() || !s.Engine().Bound() {
				t.Fatal("not bound")
			}
			rootfd, err := backing.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer backing.Close(rootfd)
			if _, err := s.Tree().DirIDs().ReadRoot(rootfd); err != nil {
				t.Fatalf("root ID: %v", err)
			}
		})
	}
	if _, err := Open(dir, password, Options{BoundVaultID: bytes.Repeat([]byte{1}, 16)}); err == nil {
		t.Fatal("a BoundVaultID other than the config's was accepted")
	}
}
