package vault

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"filippo.io/age"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
)

// The committed example vault of format version 2 (key slots,
// docs/format.md §3a) must stay readable by every later encryptfs, with
// each of its documented credentials (testdata/example-vaults/README.md).
// It was made by this test with ENCRYPTFS_REGENERATE_V2_EXAMPLES=1 (a
// variable of its own: regenerating the format-1 vaults is not allowed).

const (
	exampleV2Dir      = "v2-aes-256-gcm"
	exampleV2Creds    = "v2-credentials"
	exampleV2Password = "encryptfs example v2"
)

func exampleV2Cred(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplePath(exampleV2Creds), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestExampleVaultV2(t *testing.T) {
	if os.Getenv("ENCRYPTFS_REGENERATE_V2_EXAMPLES") == "1" {
		regenerateExampleV2(t)
	}
	dir := examplePath(exampleV2Dir)
	before, err := os.ReadFile(filepath.Join(dir, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	recovery, err := keyslot.ParsePaperKey(exampleV2Cred(t, "recovery-key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := keyslot.ParseIdentities(exampleV2Cred(t, "age-identity.txt"), keyslot.IdentityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	master, err := hex.DecodeString(string(bytes.TrimSpace(exampleV2Cred(t, "master-key.hex"))))
	if err != nil {
		t.Fatal(err)
	}
	doors := []struct {
		name string
		cr   keyslot.Credentials
		slot int
	}{
		{"password", keyslot.Credentials{Password: func() ([]byte, error) { return []byte(exampleV2Password), nil }}, 1},
		{"keyfile", keyslot.Credentials{Keyfiles: [][]byte{exampleV2Cred(t, "keyfile")}}, 2},
		{"recovery", keyslot.Credentials{RecoveryKeys: [][]byte{recovery}}, 3},
		{"age", keyslot.Credentials{Identities: []age.Identity{ids[0]}}, 4},
		{"master key", keyslot.Credentials{MasterKey: master}, 0},
	}
	for _, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			s, err := session.OpenWith(dir, d.cr, session.Options{})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if id, _ := s.UnlockedBy(); id != d.slot {
				t.Errorf("opened by slot %d, want %d", id, d.slot)
			}
			if d.slot == 4 && s.KeyCheck() != session.KeyVerified {
				t.Errorf("age key not verified: %v", s.KeyCheck())
			}
			v, err := FromSession(s)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			checkExampleContent(t, v)
		})
	}
	// The format-1 door (vault.Open, a password) opens it too.
	v, err := Open(dir, []byte(exampleV2Password))
	if err != nil {
		t.Fatalf("vault.Open: %v", err)
	}
	checkExampleContent(t, v)
	v.Close()
	after, _ := os.ReadFile(filepath.Join(dir, config.FileName))
	if !bytes.Equal(before, after) {
		t.Fatal("opening changed the committed config")
	}
}

// writeExampleContent writes what every example vault holds (exampleFiles
// and the symlink) into v, for the generators.
func writeExampleContent(t *testing.T, v *Vault) {
	t.Helper()
	for name, data := range exampleFiles {
		if err := v.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := v.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Symlink(exampleTarget, exampleLink); err != nil {
		t.Fatal(err)
	}
}

func checkExampleContent(t *testing.T, v *Vault) {
	t.Helper()
	if v.Cipher() != "aes-256-gcm" || v.ChunkSize() != 4096 {
		t.Fatalf("cipher %s chunk %d", v.Cipher(), v.ChunkSize())
	}
	for name, want := range exampleFiles {
		got, err := v.ReadFile(name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v (got %d bytes, want %d)", name, err, len(got), len(want))
		}
	}
	if target, err := v.Readlink(exampleLink); err != nil || target != exampleTarget {
		t.Errorf("symlink: %q, %v", target, err)
	}
}

func regenerateExampleV2(t *testing.T) {
	dir, creds := examplePath(exampleV2Dir), examplePath(exampleV2Creds)
	for _, d := range []string{dir, creds} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyfile := make([]byte, 32)
	rand.Read(keyfile)
	recovery, err := keyslot.NewRecoveryKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := kdf.Cheapest(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, master, err := session.CreateWith(dir, []keyslot.NewSlot{
		{Type: config.SlotPassword, Label: "password", Password: []byte(exampleV2Password), KDF: k},
		{Type: config.SlotKeyfile, Label: "keyfile", Keyfile: keyfile},
		{Type: config.SlotRecovery, Label: "paper recovery key", RecoveryKey: recovery},
		{Type: config.SlotAge, Label: "age X25519", Recipient: id.Recipient().String()},
	}, session.CreateOptions{
		Params:  config.NewParamsV2("aes-256-gcm", 4096),
		Creator: "encryptfs example generator",
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"keyfile":          keyfile,
		"recovery-key.txt": []byte(keyslot.FormatPaperKey(recovery) + "\n"),
		"age-identity.txt": []byte("# test only: the age identity of the v2 example vault's slot 4\n" + id.String() + "\n"),
		"master-key.hex":   []byte(hex.EncodeToString(master) + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(creds, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := fromSession(s, master)
	if err != nil {
		t.Fatal(err)
	}
	writeExampleContent(t, v)
	v.Close()
	chmodExampleFiles(dir)
}
