package config

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
)

// The known-answer vectors of master-key epochs (testdata/vectors/
// config-epochs.json, docs/format.md §3b): a format-2 config with a
// password and a keyfile slot, revoked twice (epoch 2), from
// deterministic randomness, with the epoch keys, the seal key, the seal's
// associated data and the MAC key. ENCRYPTFS_UPDATE_VECTORS=1 rewrites it
// (only when the format changes, which it must not once released).

const vectorsEpochsFile = "config-epochs.json"

type epochVectors struct {
	Description string
	Seed        string
	Password    string // opens slot 1 at epoch 2
	Keyfile     hexBytes
	EpochKeys   []hexBytes // K_0, K_1, K_2
	SealKey     hexBytes   // HKDF(K_2, "encryptfs v2 epoch seal")
	SealAD      string     // as text (NULs as \u0000, the epoch as \u0000\u0000\u0000\u0002)
	MACKey      hexBytes   // HKDF(K_2, "encryptfs v2 config mac")
	Config      string     // the file as stored
}

func generateEpochVectors(t *testing.T) epochVectors {
	const seed = "encryptfs config epochs vectors"
	v := epochVectors{
		Description: "format-2 encryptfs.conf with KeyEpochs at epoch 2: password (Argon2id t=1, 8 MiB, 1 lane) and keyfile slots, revoked twice; randomness = ChaCha20 keystream under SHA-256(Seed)",
		Seed:        seed,
		Password:    "encryptfs epochs vectors",
		Keyfile:     []byte("keyfile: at least sixteen bytes of key material"),
	}
	r := seededRand(seed)
	slots := func() []KeptSlot {
		k, err := kdf.New(r, kdf.MinTime, kdf.MinMemoryKiB, kdf.MinThreads)
		if err != nil {
			t.Fatal(err)
		}
		pw := SlotHeader{ID: 1, Type: SlotPassword, Label: "password", KDF: &k}
		pwSecret, err := (&Config{}).PasswordSecret(pw, []byte(v.Password))
		if err != nil {
			t.Fatal(err)
		}
		kf := SlotHeader{ID: 2, Type: SlotKeyfile, Label: "keyfile", Salt: make([]byte, SlotSaltSize)}
		io.ReadFull(r, kf.Salt)
		kfSecret, err := HKDFSecret(kf, v.Keyfile)
		if err != nil {
			t.Fatal(err)
		}
		return []KeptSlot{{pw, pwSecret}, {kf, kfSecret}}
	}
	first := slots()
	c, k0, err := CreateV2(NewParamsV2(string(content.AES256GCM), 4096), first[0].Header, first[0].Secret, r)
	if err != nil {
		t.Fatal(err)
	}
	c.Creator = "encryptfs vectors"
	if _, err := c.AddSlot(k0, first[1].Header, first[1].Secret, r); err != nil {
		t.Fatal(err)
	}
	v.EpochKeys = []hexBytes{k0}
	current := k0
	for range 2 {
		next := make([]byte, 32)
		io.ReadFull(r, next)
		n, err := c.Revoke(current, next, slots(), r)
		if err != nil {
			t.Fatal(err)
		}
		c, current = n, next
		v.EpochKeys = append(v.EpochKeys, next)
	}
	v.SealKey, _ = hkdf.Key(sha256.New, current, nil, epochSealLabel, 32)
	v.SealAD = string(epochAD(c.rawParams, c.Epoch()))
	v.MACKey, _ = macKey(current)
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	v.Config = string(data)
	return v
}

func TestEpochVectors(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "vectors", vectorsEpochsFile)
	gen := generateEpochVectors(t)
	if os.Getenv("ENCRYPTFS_UPDATE_VECTORS") == "1" {
		out, err := json.MarshalIndent(gen, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file epochVectors
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(file)
	got, _ := json.Marshal(gen)
	if !bytes.Equal(want, got) {
		t.Fatalf("generated vectors differ from %s (the format changed?)\n%s", path, gen.Config)
	}
	// Decrypt direction: the stored file opens with each credential to
	// K_2, and K_2 unseals K_0 and K_1.
	c, err := Parse([]byte(file.Config))
	if err != nil {
		t.Fatal(err)
	}
	if c.Epoch() != 2 {
		t.Fatalf("epoch %d", c.Epoch())
	}
	k2, err := c.Unlock([]byte(file.Password))
	if err != nil || !bytes.Equal(k2, file.EpochKeys[2]) {
		t.Fatalf("password: %v", err)
	}
	s, _, _ := c.SlotByID(2)
	secret, _ := HKDFSecret(s.Header, file.Keyfile)
	if m, err := c.OpenSlot(2, secret); err != nil || !bytes.Equal(m, k2) {
		t.Fatalf("keyfile: %v", err)
	}
	chain, err := c.EpochKeys(k2)
	if err != nil || len(chain) != 2 || !bytes.Equal(chain[0], file.EpochKeys[0]) || !bytes.Equal(chain[1], file.EpochKeys[1]) {
		t.Fatalf("EpochKeys = %x, %v", chain, err)
	}
	if err := c.VerifyMAC(file.EpochKeys[0]); !errors.Is(err, ErrTampered) {
		t.Fatalf("K_0 verified the epoch-2 MAC: %v", err)
	}
	// Round trip: marshal gives the same bytes.
	if out, err := c.Marshal(); err != nil || string(out) != file.Config {
		t.Fatalf("marshal: %v", err)
	}
}

// TestEpochFieldsStrict: the epoch fields go with the flag; an edit of
// the epoch number or the sealed keys is refused (corrupt when the shape
// is wrong, the MAC when it is not), and a format-2 config without
// epochs is unchanged by this feature (TestV2Vectors).
func TestEpochFieldsStrict(t *testing.T) {
	gen := generateEpochVectors(t)
	cfg := gen.Config
	password := []byte(gen.Password)
	for name, edit := range map[string]func(string) string{
		"no flag":     func(s string) string { return strings.Replace(s, ",\n\t\t\t\"KeyEpochs\"", "", 1) },
		"no Epoch":    func(s string) string { return strings.Replace(s, "\n\t\"Epoch\": 2,", "", 1) },
		"epoch 0":     func(s string) string { return strings.Replace(s, "\"Epoch\": 2,", "\"Epoch\": 0,", 1) },
		"epoch 1":     func(s string) string { return strings.Replace(s, "\"Epoch\": 2,", "\"Epoch\": 1,", 1) },
		"epoch twice": func(s string) string { return strings.Replace(s, "\"Epoch\": 2,", "\"Epoch\": 2,\"Epoch\": 2,", 1) },
	} {
		t.Run(name, func(t *testing.T) {
			e := edit(cfg)
			if e == cfg {
				t.Fatal("edit did nothing")
			}
			if _, err := Parse([]byte(e)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Parse: %v, want ErrCorrupt", err)
			}
		})
	}
	// A flipped bit in the sealed keys: the shape is fine, the MAC is not.
	i := strings.Index(cfg, "\"OldEpochs\": \"") + len("\"OldEpochs\": \"") + 20
	other := "A"
	if cfg[i] == 'A' {
		other = "B"
	}
	flipped := cfg[:i] + other + cfg[i+1:]
	c, err := Parse([]byte(flipped))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Unlock(password); !errors.Is(err, ErrTampered) {
		t.Fatalf("flipped sealed keys: %v", err)
	}
}
