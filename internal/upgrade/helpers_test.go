package upgrade

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"filippo.io/age"
	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// The session's test helpers the upgrade's tests need (they moved here
// from internal/session with the upgrade).

var password = []byte("correct horse")

var testVaultID = bytes.Repeat([]byte{0x5e}, config.VaultIDSize)

func cheapKDF(t *testing.T) session.KDFParams {
	t.Helper()
	k, err := kdf.Cheapest(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pwFunc(pw []byte) func() ([]byte, error) {
	return func() ([]byte, error) { return bytes.Clone(pw), nil }
}

// newV2Vault creates a format-2 vault with a password slot (1) and an age
// slot (2) for a fresh X25519 identity, with the root entries given.
func newV2Vault(t *testing.T, rootFiles ...string) (string, []byte, *age.X25519Identity) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, master, err := session.CreateWith(dir, []keyslot.NewSlot{
		{Type: config.SlotPassword, Label: "pw", Password: password, KDF: cheapKDF(t)},
		{Type: config.SlotAge, Label: "laptop", Recipient: id.Recipient().String()},
	}, session.CreateOptions{Params: config.NewParamsV2(string(session.AES256GCM), session.DefaultChunkSize)})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range rootFiles {
		addRootFile(t, s, name)
	}
	s.Close()
	return dir, master, id
}

func readConfig(t *testing.T, dir string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func addRootFile(t *testing.T, s *session.Session, name string) {
	t.Helper()
	rootfd, err := backing.OpenRoot(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close(rootfd)
	id, err := s.Tree().DirIDs().Read(rootfd, bind.Place{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Tree().Name(id, name)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := s.Tree().Create(tree.NewDir(rootfd, nil, nil), n, 0, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	backing.Close(fd)
}
