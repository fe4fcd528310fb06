package reversefs

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/session"
)

// TestConfigShownAsUnlocked: the view's encryptfs.conf is the reverse
// config the session unlocked, even if the file in PLAINDIR is replaced
// between the unlock and the view (it was read again, so a copy of the
// view held a config the view's keys do not belong to).
func TestConfigShownAsUnlocked(t *testing.T) {
	plain := t.TempDir()
	create := func() []byte {
		k, err := kdf.Cheapest(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := config.Create(config.NewParams(string(content.AES256SIV), testChunk, k), []byte("pw"), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		data, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := config.WriteFileAtomic(plain, ConfigName, data); err != nil {
			t.Fatal(err)
		}
		return data
	}
	unlocked := create()
	s, err := session.OpenReverse(plain, []byte("pw"), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	swapped := create()
	r, err := NewRoot(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if bytes.Equal(unlocked, swapped) {
		t.Fatal("the two configs are equal")
	}
	if !bytes.Equal(r.v.Config(), unlocked) {
		t.Fatalf("the view shows %q, want the unlocked config %q", r.v.Config(), unlocked)
	}
}
