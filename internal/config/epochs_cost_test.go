package config

import (
	"encoding/base64"
	"io"
	"strconv"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// TestEpochConfigCost measures what epochs add to a config (the figures
// of docs/format.md §3b) and checks them against the formula there: at
// epoch e ≥ 1 the file grows by the KeyEpochs flag, the "Epoch" line and
// the base64 of 12 + 32e + 16 bytes; the slots keep their size (a fresh
// salt or nonce of the same length).
func TestEpochConfigCost(t *testing.T) {
	r := seededRand("epoch cost")
	h := SlotHeader{Type: SlotKeyfile, Label: "k", Salt: make([]byte, SlotSaltSize)}
	secret := make([]byte, SlotSecretSize)
	io.ReadFull(r, h.Salt)
	io.ReadFull(r, secret)
	c, current, err := CreateV2(NewParamsV2(string(content.AES256GCM), 4096), h, secret, r)
	if err != nil {
		t.Fatal(err)
	}
	size := func(c *Config) int {
		b, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	size0 := size(c)
	flagBytes := len(",\n\t\t\t\"" + FlagKeyEpochs + "\"")
	h.ID = 1
	for e := 1; e <= 256; e++ {
		next := make([]byte, 32)
		io.ReadFull(r, next)
		n, err := c.Revoke(current, next, []KeptSlot{{h, secret}}, r)
		if err != nil {
			t.Fatal(err)
		}
		c, current = n, next
		want := size0 + flagBytes + len(",\n\t\"Epoch\": "+strconv.Itoa(e)) +
			len(",\n\t\"OldEpochs\": \"\"") + base64.StdEncoding.EncodedLen(12+32*e+16)
		if got := size(c); got != want {
			t.Fatalf("epoch %d: config of %d bytes, want %d", e, got, want)
		}
		switch e {
		case 1, 2, 10, 100, 256:
			t.Logf("epoch %3d: config %6d bytes (+%d over epoch 0)", e, size(c), size(c)-size0)
		}
	}
}
