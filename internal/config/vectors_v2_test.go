package config

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"golang.org/x/crypto/chacha20"
)

// The known-answer vectors of format 2's config (testdata/vectors/
// config-v2.json, docs/format.md §3a): a config made from deterministic
// randomness, with every intermediate value. Rewrite the file with
// ENCRYPTFS_UPDATE_VECTORS=1 only when the format changes (which it must
// not, for format 2, once released).

const vectorsV2File = "config-v2.json"

type hexBytes []byte

func (h hexBytes) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }
func (h *hexBytes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	d, err := hex.DecodeString(s)
	*h = d
	return err
}

type slotVector struct {
	ID      int
	Type    string
	Secret  hexBytes // the slot secret
	WrapKey hexBytes // HKDF(secret, "encryptfs v2 slot wrap")
	AD      string   // the wrap's associated data, as text (NULs as \u0000)
}

type configV2Vectors struct {
	Description string
	Seed        string
	Password    string
	Keyfile     hexBytes
	RecoveryKey hexBytes
	MasterKey   hexBytes
	MACKey      hexBytes // HKDF(master, "encryptfs v2 config mac")
	Slots       []slotVector
	Config      string // the file as stored

	// Feature vectors (features.go), drawn after everything above from
	// the same stream: Bound is a new config with BoundLocations, as
	// init makes; Upgraded is Config after UpgradeParams added it, with
	// SlotParams.
	Bound    *featureVector `json:",omitempty"`
	Upgraded *featureVector `json:",omitempty"`
}

// featureVector is a config with format-2 features.
type featureVector struct {
	Description string
	VaultID     hexBytes
	MasterKey   hexBytes
	SlotAD      string // slot 1's wrap AD: Params, or SlotParams if stored
	MACInput    string // what the config MAC is computed over, as text
	Config      string
}

// seededRand is the ChaCha20 keystream under SHA-256(seed), zero nonce:
// the same construction as the crypto packages' vectors (vectortest.Rand),
// which this package cannot import.
func seededRand(seed string) io.Reader {
	key := sha256.Sum256([]byte(seed))
	c, err := chacha20.NewUnauthenticatedCipher(key[:], make([]byte, chacha20.NonceSize))
	if err != nil {
		panic(err)
	}
	return readerFunc(func(p []byte) (int, error) {
		clear(p)
		c.XORKeyStream(p, p)
		return len(p), nil
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func generateV2Vectors(t *testing.T) configV2Vectors {
	const seed = "encryptfs config v2 vectors"
	v := configV2Vectors{
		Description: "format-2 encryptfs.conf: password (Argon2id t=1, 8 MiB, 1 lane), keyfile and recovery slots; randomness = ChaCha20 keystream under SHA-256(Seed)",
		Seed:        seed,
		Password:    "encryptfs vectors v2",
		Keyfile:     []byte("keyfile: at least sixteen bytes of key material"),
		RecoveryKey: bytes.Repeat([]byte{0xc3, 0x3c}, 16),
	}
	r := seededRand(seed)
	k, err := kdf.New(r, kdf.MinTime, kdf.MinMemoryKiB, kdf.MinThreads)
	if err != nil {
		t.Fatal(err)
	}
	h := SlotHeader{Type: SlotPassword, Label: "password", KDF: &k}
	pwSecret, err := (&Config{}).PasswordSecret(h, []byte(v.Password))
	if err != nil {
		t.Fatal(err)
	}
	c, master, err := CreateV2(NewParamsV2(string(content.AES256GCM), 4096), h, pwSecret, r)
	if err != nil {
		t.Fatal(err)
	}
	c.Creator = "encryptfs vectors"
	secrets := map[int][]byte{1: pwSecret}
	for _, add := range []struct {
		typ, label string
		cred       []byte
	}{{SlotKeyfile, "keyfile", v.Keyfile}, {SlotRecovery, "recovery", v.RecoveryKey}} {
		h := SlotHeader{Type: add.typ, Label: add.label, Salt: make([]byte, SlotSaltSize)}
		io.ReadFull(r, h.Salt)
		secret, err := HKDFSecret(h, add.cred)
		if err != nil {
			t.Fatal(err)
		}
		id, err := c.AddSlot(master, h, secret, r)
		if err != nil {
			t.Fatal(err)
		}
		secrets[id] = secret
	}
	v.MasterKey = master
	v.MACKey, _ = macKey(master)
	for _, s := range c.Slots {
		wk, _ := hkdf.Key(sha256.New, secrets[s.Header.ID], nil, slotWrapLabel, 32)
		v.Slots = append(v.Slots, slotVector{ID: s.Header.ID, Type: s.Header.Type, Secret: secrets[s.Header.ID],
			WrapKey: wk, AD: string(slotAD(c.rawParams, s.rawHeader))})
	}
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	v.Config = string(data)
	v.Bound, v.Upgraded = generateFeatureVectors(t, r, c, master, v.Password)
	return v
}

// generateFeatureVectors makes the Bound and Upgraded vectors (r goes on
// from the base vectors' stream; base is their config).
func generateFeatureVectors(t *testing.T, r io.Reader, base *Config, baseMaster []byte, password string) (*featureVector, *featureVector) {
	vid := make([]byte, VaultIDSize)
	io.ReadFull(r, vid)
	k, err := kdf.New(r, kdf.MinTime, kdf.MinMemoryKiB, kdf.MinThreads)
	if err != nil {
		t.Fatal(err)
	}
	h := SlotHeader{Type: SlotPassword, Label: "password", KDF: &k}
	secret, err := (&Config{}).PasswordSecret(h, []byte(password))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewParamsV2(string(content.AES256GCM), 4096).WithBoundLocations(vid)
	if err != nil {
		t.Fatal(err)
	}
	bc, bmaster, err := CreateV2(p, h, secret, r)
	if err != nil {
		t.Fatal(err)
	}
	bc.Creator = "encryptfs vectors"
	bound := featureVector{
		Description: "a new format-2 config with BoundLocations (as init makes it): VaultID in Params, which every slot wrap and the MAC authenticate",
		VaultID:     vid, MasterKey: bmaster,
	}
	uvid := make([]byte, VaultIDSize)
	io.ReadFull(r, uvid)
	up, err := base.Params.WithBoundLocations(uvid)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := base.UpgradeParams(baseMaster, up, r)
	if err != nil {
		t.Fatal(err)
	}
	upgraded := featureVector{
		Description: "Config after encryptfs upgrade added BoundLocations (UpgradeParams): the old Params kept as SlotParams, which the slot wraps authenticate; the MAC covers Params, Slots and SlotParams",
		VaultID:     uvid, MasterKey: baseMaster,
	}
	for _, fv := range []struct {
		v *featureVector
		c *Config
	}{{&bound, bc}, {&upgraded, uc}} {
		data, err := fv.c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		fv.v.Config = string(data)
		fv.v.SlotAD = string(slotAD(fv.c.slotParams(), fv.c.Slots[0].rawHeader))
		in := macPrefix + string(fv.c.rawParams) + "\x00" + string(fv.c.rawSlots)
		if fv.c.rawSlotParams != nil {
			in += "\x00" + string(fv.c.rawSlotParams)
		}
		fv.v.MACInput = in
	}
	return &bound, &upgraded
}

func TestV2Vectors(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "vectors", vectorsV2File)
	gen := generateV2Vectors(t)
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
	var file configV2Vectors
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(file)
	got, _ := json.Marshal(gen)
	if !bytes.Equal(want, got) {
		t.Fatalf("generated vectors differ from %s (the format changed?)\n%s", path, gen.Config)
	}
	// Decrypt direction: the stored file opens with each credential.
	c, err := Parse([]byte(file.Config))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := c.Unlock([]byte(file.Password)); err != nil || !bytes.Equal(m, file.MasterKey) {
		t.Fatalf("password: %v", err)
	}
	for id, cred := range map[int][]byte{2: file.Keyfile, 3: file.RecoveryKey} {
		s, _, _ := c.SlotByID(id)
		secret, _ := HKDFSecret(s.Header, cred)
		if m, err := c.OpenSlot(id, secret); err != nil || !bytes.Equal(m, file.MasterKey) {
			t.Fatalf("slot %d: %v", id, err)
		}
	}
	if file.Bound == nil || file.Upgraded == nil {
		t.Fatal("the feature vectors are missing")
	}
	for _, fv := range []*featureVector{file.Bound, file.Upgraded} {
		c, err := Parse([]byte(fv.Config))
		if err != nil {
			t.Fatal(err)
		}
		if m, err := c.Unlock([]byte(file.Password)); err != nil || !bytes.Equal(m, fv.MasterKey) {
			t.Fatalf("%s: password: %v", fv.Description, err)
		}
		if !c.Params.Bound() || !bytes.Equal(c.Params.VaultID, fv.VaultID) {
			t.Fatalf("%s: Params %+v", fv.Description, c.Params)
		}
		mk, _ := macKey(fv.MasterKey)
		m := hmac.New(sha256.New, mk)
		m.Write([]byte(fv.MACInput))
		if !hmac.Equal(m.Sum(nil), c.MAC) {
			t.Fatalf("%s: the MAC is not HMAC(MACKey, MACInput)", fv.Description)
		}
	}
}
