package config

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

var testVaultID = bytes.Repeat([]byte{0xa7}, VaultIDSize)

// TestBoundLocationsRoundTrip: a format-2 config made with BoundLocations
// stores the VaultID in Params, parses back to the same Params, and opens
// with every slot.
func TestBoundLocationsRoundTrip(t *testing.T) {
	c, master := newV2Config(t, randomBytes)
	p, err := c.Params.WithBoundLocations(testVaultID)
	if err != nil {
		t.Fatal(err)
	}
	up, err := c.UpgradeParams(master, p, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	data := mustMarshal(t, up)
	if !bytes.Contains(data, []byte(`"VaultID": "p6enp6enp6enp6enp6enpw=="`)) || !bytes.Contains(data, []byte(`"SlotParams": `)) {
		t.Fatalf("stored config lacks VaultID or SlotParams:\n%s", data)
	}
	back, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Params.Bound() || !bytes.Equal(back.Params.VaultID, testVaultID) {
		t.Fatalf("parsed Params %+v", back.Params)
	}
	for i, err := range unlockAll(back) {
		if err != nil {
			t.Errorf("credential %d after UpgradeParams: %v", i, err)
		}
	}
	if err := back.VerifyMAC(master); err != nil {
		t.Fatal(err)
	}
	// A slot added after the upgrade opens too (sealed under SlotParams).
	if _, err := back.AddSlot(master, SlotHeader{Type: SlotRecovery, Label: "second", Salt: make([]byte, SlotSaltSize)}, bytes.Repeat([]byte{1}, SlotSecretSize), bytes.NewReader(randomBytes())); err != nil {
		t.Fatal(err)
	}
	again, err := Parse(mustMarshal(t, back))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.OpenSlot(4, bytes.Repeat([]byte{1}, SlotSecretSize)); err != nil {
		t.Fatalf("slot added after the upgrade: %v", err)
	}
	// Upgrading again with the same features is a no-op on Params.
	p2, err := again.Params.WithBoundLocations(bytes.Repeat([]byte{1}, VaultIDSize))
	if err != nil || !bytes.Equal(p2.VaultID, testVaultID) {
		t.Fatalf("WithBoundLocations on a bound vault: %v %x", err, p2.VaultID)
	}
}

// TestBoundLocationsTamper: the VaultID and SlotParams are authenticated:
// an edit of either in the stored file refuses every credential (the slot
// wraps or the MAC).
func TestBoundLocationsTamper(t *testing.T) {
	c, master := newV2Config(t, randomBytes)
	p, err := c.Params.WithBoundLocations(testVaultID)
	if err != nil {
		t.Fatal(err)
	}
	up, err := c.UpgradeParams(master, p, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	data := string(mustMarshal(t, up))
	for name, edit := range map[string]func(string) string{
		"VaultID": func(s string) string {
			return strings.Replace(s, "p6enp6enp6enp6enp6enpw==", "p6enp6enp6enp6enp6enpg==", 1)
		},
		"drop flag":  func(s string) string { return strings.Replace(s, `"BoundLocations"`, `"DirID"`, 1) },
		"SlotParams": func(s string) string { return strings.Replace(s, `"SlotParams": {`, `"SlotParams": { `, 1) },
	} {
		t.Run(name, func(t *testing.T) {
			edited := edit(data)
			if edited == data {
				t.Fatal("edit did nothing")
			}
			ec, err := Parse([]byte(edited))
			if err != nil {
				return // refused at parse: fine
			}
			if _, err := ec.Unlock(testPassword); !errors.Is(err, ErrTampered) && !errors.Is(err, ErrWrongPassword) {
				t.Fatalf("unlock of an edited config: %v", err)
			}
			if err := ec.VerifyMAC(master); !errors.Is(err, ErrTampered) {
				t.Fatalf("MAC of an edited config: %v", err)
			}
		})
	}
}

// TestFeatureParamsStrict: the VaultID is there exactly with the flag,
// 16 bytes, a strict base64 string; format 1 has neither; unknown flags
// are refused.
func TestFeatureParamsStrict(t *testing.T) {
	const head = `{"Creator":"x","Params":{"FormatVersion":2,"FeatureFlags":["HKDF","DirID","LongNames","AuthenticatedHoles","FinalChunkFlag","Keyslots"%s],"Cipher":"aes-256-gcm","ChunkSize":16384%s},"Slots":[{"Header":{"ID":1,"Type":"recovery","Salt":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="},"Wrapped":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}],"MAC":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`
	fmtCfg := func(flags, vid string) []byte {
		return []byte(strings.Replace(strings.Replace(head, "%s", flags, 1), "%s", vid, 1))
	}
	if _, err := Parse(fmtCfg("", "")); err != nil {
		t.Fatalf("the base config must parse: %v", err)
	}
	if c, err := Parse(fmtCfg(`,"BoundLocations"`, `,"VaultID":"p6enp6enp6enp6enp6enpw=="`)); err != nil || !c.Params.Bound() {
		t.Fatalf("bound config: %v", err)
	}
	if c, err := Parse(fmtCfg(`,"BoundLocations","Freshness"`, `,"VaultID":"p6enp6enp6enp6enp6enpw=="`)); err != nil || !c.Params.Has(FlagFreshness) {
		t.Fatalf("bound config with freshness: %v", err)
	}
	for name, tc := range map[string]struct {
		flags, vid string
		want       error
	}{
		"flag without VaultID":  {`,"BoundLocations"`, ``, ErrCorrupt},
		"VaultID without flag":  {``, `,"VaultID":"p6enp6enp6enp6enp6enpw=="`, ErrCorrupt},
		"VaultID 15 bytes":      {`,"BoundLocations"`, `,"VaultID":"p6enp6enp6enp6enp6en"`, ErrCorrupt},
		"VaultID 17 bytes":      {`,"BoundLocations"`, `,"VaultID":"p6enp6enp6enp6enp6enp6c="`, ErrCorrupt},
		"VaultID null":          {`,"BoundLocations"`, `,"VaultID":null`, ErrCorrupt},
		"VaultID empty":         {`,"BoundLocations"`, `,"VaultID":""`, ErrCorrupt},
		"VaultID not base64":    {`,"BoundLocations"`, `,"VaultID":"p6enp6enp6enp6enp6enpw"`, ErrCorrupt},
		"VaultID a number":      {`,"BoundLocations"`, `,"VaultID":7`, ErrCorrupt},
		"VaultID twice":         {`,"BoundLocations"`, `,"VaultID":"p6enp6enp6enp6enp6enpw==","VaultID":"p6enp6enp6enp6enp6enpw=="`, ErrCorrupt},
		"vaultid spelled wrong": {`,"BoundLocations"`, `,"vaultID":"p6enp6enp6enp6enp6enpw=="`, ErrCorrupt},
		"flag twice":            {`,"BoundLocations","BoundLocations"`, `,"VaultID":"p6enp6enp6enp6enp6enpw=="`, ErrCorrupt},
		"unknown flag":          {`,"NoSuchFeature"`, ``, ErrUnknownFeature},
		"Freshness unbound":     {`,"Freshness"`, ``, ErrCorrupt},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(fmtCfg(tc.flags, tc.vid)); !errors.Is(err, tc.want) {
				t.Fatalf("Parse: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestFormat1RefusesFeatures: a format-1 config with a VaultID or the
// BoundLocations flag does not parse.
func TestFormat1RefusesFeatures(t *testing.T) {
	c, _, _ := newTestConfig(t, content.AES256GCM, false)
	data := string(mustMarshal(t, c))
	withID := strings.Replace(data, `"ChunkSize"`, `"VaultID": "p6enp6enp6enp6enp6enpw==", "ChunkSize"`, 1)
	if _, err := Parse([]byte(withID)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("format 1 with a VaultID: %v", err)
	}
	withFlag := strings.Replace(data, `"FinalChunkFlag"`, `"FinalChunkFlag", "BoundLocations"`, 1)
	if withFlag == data {
		t.Fatal("no flag list in the v1 config")
	}
	if _, err := Parse([]byte(withFlag)); !errors.Is(err, ErrUnknownFeature) {
		t.Errorf("format 1 with BoundLocations: %v", err)
	}
	if _, err := c.Params.WithBoundLocations(testVaultID); !errors.Is(err, ErrNotV2) {
		t.Errorf("WithBoundLocations on format 1: %v", err)
	}
}

// TestUpgradeParamsRules: UpgradeParams only adds features, needs the
// master key, and keeps the first SlotParams.
func TestUpgradeParamsRules(t *testing.T) {
	c, master := newV2Config(t, randomBytes)
	p, err := c.Params.WithBoundLocations(testVaultID)
	if err != nil {
		t.Fatal(err)
	}
	wrong := bytes.Repeat([]byte{9}, len(master))
	if _, err := c.UpgradeParams(wrong, p, rand.Reader); !errors.Is(err, ErrTampered) {
		t.Errorf("wrong master key: %v", err)
	}
	q := p
	q.ChunkSize *= 2
	if _, err := c.UpgradeParams(master, q, rand.Reader); err == nil {
		t.Error("chunk size change accepted")
	}
	up, err := c.UpgradeParams(master, p, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r := up.Params
	r.VaultID = bytes.Repeat([]byte{1}, VaultIDSize)
	if _, err := up.UpgradeParams(master, r, rand.Reader); err == nil {
		t.Error("VaultID change accepted")
	}
	back := c.Params
	if _, err := up.UpgradeParams(master, back, rand.Reader); err == nil {
		t.Error("feature removal accepted")
	}
	again, err := up.UpgradeParams(master, up.Params, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.rawSlotParams, c.rawParams) {
		t.Error("a second UpgradeParams replaced SlotParams")
	}
}

// TestWithFeatureFreshness: Freshness is added to a bound vault's Params
// (once), and refused on an unbound one (it requires BoundLocations).
func TestWithFeatureFreshness(t *testing.T) {
	c, master := newV2Config(t, randomBytes)
	if _, err := c.Params.WithFeature(FlagFreshness); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Freshness without BoundLocations: %v", err)
	}
	p, err := c.Params.WithBoundLocations(testVaultID)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = p.WithFeature(FlagFreshness); err != nil || !p.Has(FlagFreshness) {
		t.Fatalf("WithFeature: %v %v", err, p.FeatureFlags)
	}
	again, err := p.WithFeature(FlagFreshness)
	if err != nil || len(again.FeatureFlags) != len(p.FeatureFlags) {
		t.Fatalf("WithFeature twice: %v %v", err, again.FeatureFlags)
	}
	up, err := c.UpgradeParams(master, p, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(mustMarshal(t, up))
	if err != nil || !back.Params.Has(FlagFreshness) {
		t.Fatalf("parsed: %v", err)
	}
	for i, err := range unlockAll(back) {
		if err != nil {
			t.Errorf("credential %d: %v", i, err)
		}
	}
}

// TestUpgradeParamsAfterRevoke (issue 18, M5): UpgradeParams on a config
// at epoch 2 seals the older keys again for the new Params (their AD binds
// the Params bytes): the upgraded config parses, its slot opens, the MAC
// verifies, and the chain unseals to the same keys. A second upgrade
// (SlotParams kept) does the same.
func TestUpgradeParamsAfterRevoke(t *testing.T) {
	r := seededRand("upgrade after revoke")
	h := SlotHeader{Type: SlotKeyfile, Label: "k", Salt: make([]byte, SlotSaltSize)}
	secret := make([]byte, SlotSecretSize)
	io.ReadFull(r, h.Salt)
	io.ReadFull(r, secret)
	c, current, err := CreateV2(NewParamsV2(string(content.AES256GCM), content.DefaultChunkSize), h, secret, r)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := c.Params.WithBoundLocations(testVaultID)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = c.UpgradeParams(current, bp, r); err != nil {
		t.Fatal(err)
	}
	h.ID = 1
	var want [][]byte
	for range 2 {
		next := make([]byte, 32)
		io.ReadFull(r, next)
		n, err := c.Revoke(current, next, []KeptSlot{{h, secret}}, r)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, current)
		c, current = n, next
	}
	for _, flag := range []string{FlagFileRoots, FlagFreshness} {
		p, err := c.Params.WithFeature(flag)
		if err != nil {
			t.Fatal(err)
		}
		up, err := c.UpgradeParams(current, p, r)
		if err != nil {
			t.Fatalf("add %s: %v", flag, err)
		}
		back, err := Parse(mustMarshal(t, up))
		if err != nil {
			t.Fatalf("add %s: %v", flag, err)
		}
		key, err := back.OpenSlot(1, secret)
		if err != nil || !bytes.Equal(key, current) {
			t.Fatalf("add %s: slot 1: %v", flag, err)
		}
		chain, err := back.EpochKeys(key)
		if err != nil {
			t.Fatalf("add %s: the older epoch keys: %v", flag, err)
		}
		if len(chain) != len(want) || !bytes.Equal(chain[0], want[0]) || !bytes.Equal(chain[1], want[1]) {
			t.Fatalf("add %s: the chain changed", flag)
		}
		c = back
	}
}
