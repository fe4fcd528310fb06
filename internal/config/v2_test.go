package config

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
)

var (
	testKeyfile  = []byte("0123456789abcdef-a keyfile of test bytes")
	testRecovery = bytes.Repeat([]byte{0x5a}, 32)
)

// newV2Config makes a format-2 config with a password slot (1), a keyfile
// slot (2) and a recovery slot (3), cheapest KDF, randomness from r.
func newV2Config(t *testing.T, r func() []byte) (*Config, []byte) {
	t.Helper()
	rd := bytes.NewReader(r())
	k, err := kdf.Cheapest(rd)
	if err != nil {
		t.Fatal(err)
	}
	h := SlotHeader{Type: SlotPassword, Label: "main password", KDF: &k}
	secret, err := (&Config{}).PasswordSecret(h, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	c, master, err := CreateV2(NewParamsV2(string(content.AES256GCM), content.DefaultChunkSize), h, secret, rd)
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range []struct {
		typ, label string
		cred       []byte
	}{{SlotKeyfile, "usb stick", testKeyfile}, {SlotRecovery, "paper", testRecovery}} {
		h := SlotHeader{Type: add.typ, Label: add.label, Salt: make([]byte, SlotSaltSize)}
		if _, err := rd.Read(h.Salt); err != nil {
			t.Fatal(err)
		}
		secret, err := HKDFSecret(h, add.cred)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddSlot(master, h, secret, rd); err != nil {
			t.Fatal(err)
		}
	}
	return c, master
}

func randomBytes() []byte {
	b := make([]byte, 4096)
	rand.Read(b)
	return b
}

func mustMarshal(t *testing.T, c *Config) []byte {
	t.Helper()
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// unlockAll opens c with each of the three test credentials.
func unlockAll(c *Config) []error {
	var errs []error
	_, err := c.Unlock(testPassword)
	errs = append(errs, err)
	for id, cred := range map[int][]byte{2: testKeyfile, 3: testRecovery} {
		s, _, err := c.SlotByID(id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		secret, err := HKDFSecret(s.Header, cred)
		if err == nil {
			_, err = c.OpenSlot(id, secret)
		}
		errs = append(errs, err)
	}
	return errs
}

func TestV2RoundTrip(t *testing.T) {
	c, master := newV2Config(t, randomBytes)
	data := mustMarshal(t, c)
	c2, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(Marshal()): %v\n%s", err, data)
	}
	if !bytes.Equal(mustMarshal(t, c2), data) {
		t.Fatal("Marshal(Parse(x)) != x")
	}
	if !c2.IsV2() || len(c2.Slots) != 3 || c2.Params.Reverse || c2.Params.KDF.Salt != nil {
		t.Fatalf("parsed %+v", c2.Params)
	}
	for i, err := range unlockAll(c2) {
		if err != nil {
			t.Errorf("credential %d: %v", i, err)
		}
	}
	got, err := c2.Unlock(testPassword)
	if err != nil || !bytes.Equal(got, master) {
		t.Fatalf("Unlock: %v", err)
	}
	if err := c2.VerifyMAC(master); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Unlock([]byte("wrong")); !errors.Is(err, ErrWrongPassword) {
		t.Fatalf("wrong password: %v", err)
	}
	if err := c2.Rewrap(master, testPassword, *c2.Slots[0].Header.KDF, rand.Reader); !errors.Is(err, ErrNotV1) {
		t.Fatalf("Rewrap on v2: %v", err)
	}
}

// TestV2TamperDetected edits each part of a stored format-2 config; the
// edited file must fail to parse or refuse every credential, never unlock.
func TestV2TamperDetected(t *testing.T) {
	c, _ := newV2Config(t, randomBytes)
	data := string(mustMarshal(t, c))
	s1, s2 := c.Slots[0], c.Slots[1]
	kdfSalt := base64.StdEncoding.EncodeToString(s1.Header.KDF.Salt)
	kfSalt := base64.StdEncoding.EncodeToString(s2.Header.Salt)
	w1 := base64.StdEncoding.EncodeToString(s1.Wrapped)
	w2 := base64.StdEncoding.EncodeToString(s2.Wrapped)
	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	tests := []struct{ name, old, new string }{
		{"Params cipher", `"aes-256-gcm"`, `"xchacha20-poly1305"`},
		{"Params chunk size", `"ChunkSize": 16384`, `"ChunkSize": 32768`},
		{"Params whitespace", `"ChunkSize": 16384`, `"ChunkSize":  16384`},
		{"slot ID", `"ID": 1,`, `"ID": 7,`},
		{"slot label", `"main password"`, `"main passwore"`},
		{"slot KDF time", `"Time": 1,`, `"Time": 2,`},
		{"slot KDF salt", kdfSalt, other},
		{"slot keyfile salt", kfSalt, other},
		{"slot type", `"Type": "keyfile"`, `"Type": "recovery"`},
		{"wrapped", w1, w2[:len(w2)-4] + w1[len(w1)-4:]},
		{"swap wrapped", w1 + `"`, w2 + `"` + "\x00"},
		{"MAC", `"MAC": "`, `"MAC": "AAAA`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := strings.Replace(data, tt.old, tt.new, 1)
			if tt.name == "swap wrapped" {
				edited = strings.Replace(strings.Replace(strings.Replace(data, w1, "\x01", 1), w2, w1, 1), "\x01", w2, 1)
			}
			if edited == data {
				t.Fatalf("edit %q did not apply", tt.old)
			}
			c, err := Parse([]byte(edited))
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Parse: %v, want ErrCorrupt", err)
				}
				return
			}
			for i, err := range unlockAll(c) {
				if err == nil {
					t.Errorf("credential %d opened an edited config", i)
				}
			}
		})
	}
}

// TestV2SlotSetEdits: whole-slot edits by the storage (remove, reorder,
// duplicate, restore an old slot) are caught by the MAC after a slot opens.
func TestV2SlotSetEdits(t *testing.T) {
	c, master := newV2Config(t, randomBytes)
	data := mustMarshal(t, c)
	// Build edited slot sets with a MAC that is not recomputed (the
	// storage does not have the master key).
	edit := func(slots []Slot) []byte {
		e := *c
		e.Slots, e.rawSlots = slots, encodeSlots(slots)
		return mustMarshal(t, &e)
	}
	old, _ := newV2Config(t, randomBytes) // another vault's slot
	tests := map[string][]byte{
		"removed":   edit(c.Slots[:2]),
		"reordered": edit([]Slot{c.Slots[1], c.Slots[0], c.Slots[2]}),
		"added":     edit(append(append([]Slot(nil), c.Slots...), Slot{Header: old.Slots[1].Header, Wrapped: old.Slots[1].Wrapped, rawHeader: bytes.Replace(old.Slots[1].rawHeader, []byte(`"ID": 2`), []byte(`"ID": 9`), 1)})),
	}
	for name, edited := range tests {
		t.Run(name, func(t *testing.T) {
			if bytes.Equal(edited, data) {
				t.Fatal("no edit")
			}
			e, err := Parse(edited)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Unlock(testPassword); !errors.Is(err, ErrTampered) {
				t.Fatalf("Unlock = %v, want ErrTampered", err)
			}
			if err := e.VerifyMAC(master); !errors.Is(err, ErrTampered) {
				t.Fatalf("VerifyMAC = %v, want ErrTampered", err)
			}
		})
	}
	// A removed slot put back after the removal is detected as well.
	removed := *c
	if err := removed.RemoveSlot(master, 2); err != nil {
		t.Fatal(err)
	}
	back := removed
	back.Slots = append(append([]Slot(nil), removed.Slots...), c.Slots[1])
	back.rawSlots = encodeSlots(back.Slots)
	e, err := Parse(mustMarshal(t, &back))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Unlock(testPassword); !errors.Is(err, ErrTampered) {
		t.Fatalf("restored slot: %v, want ErrTampered", err)
	}
}

func TestV2SlotEdits(t *testing.T) {
	c, master := newV2Config(t, randomBytes)
	if err := c.RemoveSlot(master, 4); !errors.Is(err, ErrUnknownSlot) {
		t.Fatalf("remove unknown: %v", err)
	}
	for _, id := range []int{1, 3} {
		if err := c.RemoveSlot(master, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RemoveSlot(master, 2); !errors.Is(err, ErrLastSlot) {
		t.Fatalf("remove last: %v", err)
	}
	if _, err := c.Unlock(testPassword); !errors.Is(err, ErrWrongPassword) {
		t.Fatalf("removed password slot still opens: %v", err)
	}
	wrong := bytes.Repeat([]byte{1}, 32)
	if _, err := c.AddSlot(wrong, SlotHeader{Type: SlotRecovery, Salt: make([]byte, 32)}, wrong, rand.Reader); !errors.Is(err, ErrTampered) {
		t.Fatalf("AddSlot with a wrong master key: %v", err)
	}
	h := SlotHeader{ID: 2, Type: SlotRecovery, Salt: make([]byte, 32)}
	if _, err := c.AddSlot(master, h, wrong, rand.Reader); !errors.Is(err, ErrDuplicateSlot) {
		t.Fatalf("AddSlot duplicate: %v", err)
	}
	h.ID = 0
	for i := len(c.Slots); i < MaxSlots; i++ {
		if _, err := c.AddSlot(master, h, wrong, rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AddSlot(master, h, wrong, rand.Reader); !errors.Is(err, ErrSlotLimit) {
		t.Fatalf("slot %d: %v", MaxSlots+1, err)
	}
	data := mustMarshal(t, c)
	if len(data) > MaxFileSize {
		t.Fatalf("%d slots: %d bytes", MaxSlots, len(data))
	}
	if _, err := Parse(data); err != nil {
		t.Fatal(err)
	}
}

func TestV2StrictParsing(t *testing.T) {
	c, _ := newV2Config(t, randomBytes)
	s := string(mustMarshal(t, c))
	tests := []struct {
		name, old, new string
		want           error
	}{
		{"KDF in Params", `"ChunkSize": 16384`, `"ChunkSize": 16384, "KDF": null`, ErrCorrupt},
		{"Reverse in Params", `"ChunkSize": 16384`, `"ChunkSize": 16384, "Reverse": true`, ErrCorrupt},
		{"EncryptedKey", `"MAC"`, `"EncryptedKey": "", "MAC"`, ErrCorrupt},
		{"unknown slot field", `"Wrapped"`, `"Extra": 1, "Wrapped"`, ErrCorrupt},
		{"unknown header field", `"Label": "usb stick"`, `"Label": "usb stick", "Pepper": 1`, ErrCorrupt},
		{"duplicate ID", `"ID": 2,`, `"ID": 1,`, ErrDuplicateSlot},
		{"ID 0", `"ID": 2,`, `"ID": 0,`, ErrCorrupt},
		{"ID 256", `"ID": 2,`, `"ID": 256,`, ErrCorrupt},
		{"unknown type", `"Type": "keyfile"`, `"Type": "tpm"`, ErrCorrupt},
		{"keyfile slot with KDF", `"Label": "usb stick"`, `"Label": "usb stick", "KDF": {"Algorithm": "argon2id"}`, ErrCorrupt},
		{"control char label", `"usb stick"`, `"usb\u001bstick"`, ErrCorrupt},
		{"bidi label", `"usb stick"`, `"usb\u202estick"`, ErrCorrupt},
		{"long label", `"usb stick"`, `"` + strings.Repeat("x", MaxLabel+1) + `"`, ErrCorrupt},
		{"no slots", `"Slots": [`, `"Slots": [], "X": [`, ErrCorrupt},
		{"unknown flag", `"FinalChunkFlag",`, `"FinalChunkFlag", "Merkle",`, ErrUnknownFeature},
		{"missing Keyslots flag", `"FinalChunkFlag",
			"Keyslots"`, `"FinalChunkFlag"`, ErrCorrupt},
		{"future version", `"FormatVersion": 2`, `"FormatVersion": 3`, ErrFutureVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := strings.Replace(s, tt.old, tt.new, 1)
			if edited == s {
				t.Fatalf("edit %q did not apply", tt.old)
			}
			if _, err := Parse([]byte(edited)); !errors.Is(err, tt.want) {
				t.Fatalf("Parse = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestV2Upgrade(t *testing.T) {
	v1, master, _ := newTestConfig(t, content.XChaCha20Poly1305, false)
	k, _ := kdf.Cheapest(rand.Reader)
	h := SlotHeader{Type: SlotPassword, Label: "password", KDF: &k}
	secret, _ := v1.PasswordSecret(h, testPassword)
	v2, err := v1.UpgradeToV2(master, h, secret, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(mustMarshal(t, v2))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Unlock(testPassword)
	if err != nil || !bytes.Equal(got, master) || c.Params.Cipher != v1.Params.Cipher || c.Params.ChunkSize != v1.Params.ChunkSize {
		t.Fatalf("upgraded: %v %+v", err, c.Params)
	}
	if _, err := c.UpgradeToV2(master, h, secret, rand.Reader); !errors.Is(err, ErrNotV1) {
		t.Fatalf("upgrade twice: %v", err)
	}
	rev, rmaster, _ := newTestConfig(t, content.AES256SIV, true)
	if _, err := rev.UpgradeToV2(rmaster, h, secret, rand.Reader); !errors.Is(err, ErrReverseV2) {
		t.Fatalf("upgrade reverse: %v", err)
	}
}

func TestV2FileSizeBound(t *testing.T) {
	if _, err := Parse(bytes.Repeat([]byte(" "), MaxFileSize+1)); !errors.Is(err, ErrCorrupt) {
		t.Fatal(err)
	}
	_ = fmt.Sprint()
}
