package vault

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"filippo.io/age"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/upgrade"
)

// The committed example vault of format 2 with location binding
// (docs/format.md §14): v2-bound-aes-256-gcm is what `encryptfs upgrade`
// (upgrade.Content) made of a copy of v2-aes-256-gcm, so it has the
// same master key and key slots (the credentials in v2-credentials) and
// shows an upgraded config's SlotParams. It must stay readable, bound,
// forever after. Made by this test with
// ENCRYPTFS_REGENERATE_V2_BOUND_EXAMPLE=1; do not regenerate it.

const (
	exampleV2BoundDir = "v2-bound-aes-256-gcm"
	// exampleV2BoundID is the VaultID its config holds.
	exampleV2BoundID = "0e5ad2d7c7f4f1de7c2a5d0b7bfb6d04"
)

func TestExampleVaultV2Bound(t *testing.T) {
	if os.Getenv("ENCRYPTFS_REGENERATE_V2_BOUND_EXAMPLE") == "1" {
		regenerateExampleV2Bound(t)
	}
	dir := examplePath(exampleV2BoundDir)
	before, c := exampleConfig(t, dir)
	if !c.Params.Bound() || hex.EncodeToString(c.Params.VaultID) != exampleV2BoundID || !bytes.Contains(before, []byte(`"SlotParams"`)) {
		t.Fatalf("the example's config is not the upgraded, bound one: %+v", c.Params)
	}
	recovery, err := keyslot.ParsePaperKey(exampleV2Cred(t, "recovery-key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := keyslot.ParseIdentities(exampleV2Cred(t, "age-identity.txt"), keyslot.IdentityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name string
		cr   keyslot.Credentials
	}{
		{"age", keyslot.Credentials{Identities: []age.Identity{ids[0]}}},
		{"password", keyslot.Credentials{Password: func() ([]byte, error) { return []byte(exampleV2Password), nil }}},
		{"keyfile", keyslot.Credentials{Keyfiles: [][]byte{exampleV2Cred(t, "keyfile")}}},
		{"recovery", keyslot.Credentials{RecoveryKeys: [][]byte{recovery}}},
	} {
		t.Run(d.name, func(t *testing.T) {
			s, err := session.OpenWith(dir, d.cr, session.Options{})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if !s.Tree().Bound() || !s.Engine().Bound() {
				t.Fatal("the session does not bind locations")
			}
			v, err := FromSession(s)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			checkExampleContent(t, v)
		})
	}
	// The binding is on: a copy with one file's contents moved over
	// another's name reads that name as corrupt.
	cp := t.TempDir()
	copyTreeInto(t, dir, cp)
	v, err := Open(cp, []byte(exampleV2Password))
	if err != nil {
		t.Fatal(err)
	}
	from, err1 := v.EncryptPath("multi.bin")
	to, err2 := v.EncryptPath("chunk.bin")
	v.Close()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(cp, from), filepath.Join(cp, to)); err != nil {
		t.Fatal(err)
	}
	v, err = Open(cp, []byte(exampleV2Password))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.ReadFile("chunk.bin"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("moved contents: %v, want ErrCorrupt", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, config.FileName))
	if !bytes.Equal(before, after) {
		t.Fatal("opening changed the committed config")
	}
}

// copyTreeInto copies the regular files, directories and symlinks of src into
// dst (which exists).
func copyTreeInto(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case rel == ".":
			return nil
		case d.IsDir():
			return os.Mkdir(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// regenerateExampleV2Bound upgrades a copy of the v2 example vault.
func regenerateExampleV2Bound(t *testing.T) {
	dir := examplePath(exampleV2BoundDir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyTreeInto(t, examplePath(exampleV2Dir), dir)
	vid, _ := hex.DecodeString(exampleV2BoundID)
	s, err := session.OpenWith(dir, keyslot.Credentials{Password: func() ([]byte, error) { return []byte(exampleV2Password), nil }},
		session.Options{Upgrading: true, Rand: io.MultiReader(bytes.NewReader(vid), mathrand.NewChaCha8([32]byte{2}))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := upgrade.Content(s, nil); err != nil {
		t.Fatal(err)
	}
	chmodExampleFiles(dir)
}
