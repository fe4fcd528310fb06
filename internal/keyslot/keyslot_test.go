package keyslot

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"filippo.io/age/armor"
	"filippo.io/age/plugin"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
)

var (
	testPassword = []byte("correct horse battery staple")
	testKeyfile  = []byte("a keyfile of at least sixteen bytes")
)

func cheapKDF(t *testing.T) kdf.Params {
	t.Helper()
	k, err := kdf.Cheapest(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func params() config.Params {
	return config.NewParamsV2(string(content.AES256GCM), content.DefaultChunkSize)
}

// fixture is a v2 config with one slot of each type but age plugins.
type fixture struct {
	c        *config.Config
	master   []byte
	recovery []byte
	identity *age.X25519Identity
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	rk, err := NewRecoveryKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c, master, err := Create(params(), []NewSlot{
		{Type: config.SlotPassword, Label: "pw", Password: testPassword, KDF: cheapKDF(t)},
		{Type: config.SlotKeyfile, Label: "kf", Keyfile: testKeyfile},
		{Type: config.SlotRecovery, Label: "paper", RecoveryKey: rk},
		{Type: config.SlotAge, Label: "laptop", Recipient: id.Recipient().String()},
	}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// Through the file, as a vault would see it.
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if c, err = config.Parse(data); err != nil {
		t.Fatal(err)
	}
	return &fixture{c: c, master: master, recovery: rk, identity: id}
}

// countingPassword returns a password callback and a pointer to its call
// count.
func countingPassword(pw []byte) (func() ([]byte, error), *int) {
	n := 0
	return func() ([]byte, error) { n++; return bytes.Clone(pw), nil }, &n
}

func TestUnlockEachCredential(t *testing.T) {
	f := newFixture(t)
	pw, calls := countingPassword(testPassword)
	tests := []struct {
		name   string
		cr     Credentials
		slot   int
		asksPW bool
	}{
		{"password", Credentials{Password: pw}, 1, true},
		{"keyfile", Credentials{Keyfiles: [][]byte{testKeyfile}, Password: pw}, 2, false},
		{"recovery", Credentials{RecoveryKeys: [][]byte{f.recovery}, Password: pw}, 3, false},
		{"age", Credentials{Identities: []age.Identity{f.identity}, Password: pw}, 4, false},
		{"master key", Credentials{MasterKey: f.master, Password: pw}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			*calls = 0
			r, err := Unlock(f.c, tt.cr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.MasterKey, f.master) || r.SlotID != tt.slot {
				t.Fatalf("slot %d, key %x", r.SlotID, r.MasterKey)
			}
			if (*calls == 1) != tt.asksPW || *calls > 1 {
				t.Fatalf("password asked %d times", *calls)
			}
		})
	}
}

func TestUnlockWrongCredentials(t *testing.T) {
	f := newFixture(t)
	other, _ := age.GenerateX25519Identity()
	wrongPW, calls := countingPassword([]byte("wrong"))
	if _, err := Unlock(f.c, Credentials{Password: wrongPW}); !errors.Is(err, config.ErrWrongPassword) {
		t.Fatalf("wrong password: %v", err)
	}
	for name, cr := range map[string]Credentials{
		"identity":     {Identities: []age.Identity{other}},
		"keyfile":      {Keyfiles: [][]byte{[]byte("another keyfile, sixteen+ bytes")}},
		"recovery":     {RecoveryKeys: [][]byte{make([]byte, 32)}},
		"all wrong":    {Identities: []age.Identity{other}, Password: wrongPW},
		"nothing":      {},
		"master key":   {MasterKey: make([]byte, 32)},
		"keyfile type": {Keyfiles: [][]byte{f.recovery}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Unlock(f.c, cr)
			if err == nil || !(errors.Is(err, config.ErrNoSlotMatch) || errors.Is(err, config.ErrTampered)) {
				t.Fatalf("got %v", err)
			}
		})
	}
	if *calls != 2 {
		t.Fatalf("password asked %d times, want 2", *calls)
	}
	if _, err := Unlock(f.c, Credentials{Keyfiles: [][]byte{[]byte("short")}}); !errors.Is(err, ErrKeyfile) {
		t.Fatalf("short keyfile: %v", err)
	}
}

func TestRemovedSlotNoLongerOpens(t *testing.T) {
	f := newFixture(t)
	if err := Remove(f.c, f.master, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := Unlock(f.c, Credentials{Identities: []age.Identity{f.identity}}); !errors.Is(err, config.ErrNoSlotMatch) {
		t.Fatalf("removed age slot: %v", err)
	}
	for _, id := range []int{1, 2} {
		if err := Remove(f.c, f.master, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := Remove(f.c, f.master, 3); !errors.Is(err, config.ErrLastSlot) {
		t.Fatalf("last slot: %v", err)
	}
	if got := List(f.c); len(got) != 1 || got[0].ID != 3 || got[0].Type != config.SlotRecovery || got[0].Label != "paper" {
		t.Fatalf("List = %+v", got)
	}
}

func TestChangePassword(t *testing.T) {
	f := newFixture(t)
	newPW := []byte("new password")
	if _, err := ChangePassword(f.c, []byte("wrong"), newPW, cheapKDF(t), rand.Reader); !errors.Is(err, config.ErrWrongPassword) {
		t.Fatalf("wrong old password: %v", err)
	}
	id, err := ChangePassword(f.c, testPassword, newPW, cheapKDF(t), rand.Reader)
	if err != nil || id != 1 {
		t.Fatalf("ChangePassword = %d, %v", id, err)
	}
	if _, err := f.c.Unlock(testPassword); !errors.Is(err, config.ErrWrongPassword) {
		t.Fatalf("old password: %v", err)
	}
	if m, err := f.c.Unlock(newPW); err != nil || !bytes.Equal(m, f.master) {
		t.Fatalf("new password: %v", err)
	}
	if List(f.c)[0].Label != "pw" {
		t.Fatal("label lost")
	}
	if err := SetPassword(f.c, f.master, 2, newPW, cheapKDF(t), rand.Reader); !errors.Is(err, config.ErrUnknownSlot) {
		t.Fatalf("SetPassword on a keyfile slot: %v", err)
	}
}

func TestUpgrade(t *testing.T) {
	v1, master, err := config.Create(config.NewParams(string(content.AES256GCM), 4096, cheapKDF(t)), testPassword, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Upgrade(v1, []byte("wrong"), cheapKDF(t), rand.Reader); !errors.Is(err, config.ErrWrongPassword) {
		t.Fatalf("wrong password: %v", err)
	}
	v2, err := Upgrade(v1, testPassword, cheapKDF(t), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Unlock(v2, Credentials{Password: func() ([]byte, error) { return bytes.Clone(testPassword), nil }})
	if err != nil || !bytes.Equal(r.MasterKey, master) || r.SlotID != 1 {
		t.Fatalf("upgraded: %v", err)
	}
	if _, err := Add(v2, master, NewSlot{Type: config.SlotKeyfile, Keyfile: testKeyfile}, rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(v1, master, NewSlot{Type: config.SlotKeyfile, Keyfile: testKeyfile}, rand.Reader); !errors.Is(err, config.ErrNotV2) {
		t.Fatalf("Add on v1: %v", err)
	}
}

func TestBadLabelAndRecipient(t *testing.T) {
	f := newFixture(t)
	for _, label := range []string{"a\x1b[2Jb", "x\u202ey", strings.Repeat("l", 65)} {
		if _, err := Add(f.c, f.master, NewSlot{Type: config.SlotKeyfile, Label: label, Keyfile: testKeyfile}, rand.Reader); !errors.Is(err, ErrLabel) {
			t.Errorf("label %q: %v", label, err)
		}
	}
	if _, err := Add(f.c, f.master, NewSlot{Type: config.SlotAge, Recipient: "not a recipient"}, rand.Reader); !errors.Is(err, ErrRecipient) {
		t.Errorf("bad recipient: %v", err)
	}
}

// TestPassphraseProtectedIdentity: an identity file encrypted to a
// passphrase (age's scrypt recipient, as age -p makes it) unlocks; the
// passphrase is asked lazily, through the callback, once.
func TestPassphraseProtectedIdentity(t *testing.T) {
	f := newFixture(t)
	for _, armored := range []bool{false, true} {
		file := encryptIdentity(t, f.identity.String()+"\n", "identity passphrase", armored)
		asked := 0
		ids, err := ParseIdentities(file, IdentityOptions{Passphrase: func() ([]byte, error) {
			asked++
			return []byte("identity passphrase"), nil
		}})
		if err != nil || asked != 0 {
			t.Fatalf("parse: %v (asked %d)", err, asked)
		}
		r, err := Unlock(f.c, Credentials{Identities: ids})
		if err != nil || r.SlotID != 4 || asked != 1 {
			t.Fatalf("unlock: %v, slot %d, asked %d", err, r.SlotID, asked)
		}
		// Not asked when a keyfile opens first.
		ids, _ = ParseIdentities(file, IdentityOptions{Passphrase: func() ([]byte, error) { t.Fatal("asked"); return nil, nil }})
		if _, err := Unlock(f.c, Credentials{Identities: ids, Keyfiles: [][]byte{testKeyfile}}); err != nil {
			t.Fatal(err)
		}
		ids, _ = ParseIdentities(file, IdentityOptions{Passphrase: func() ([]byte, error) { return []byte("wrong"), nil }})
		if _, err := Unlock(f.c, Credentials{Identities: ids}); !errors.Is(err, config.ErrNoSlotMatch) || !errors.Is(err, ErrIdentity) {
			t.Fatalf("wrong passphrase: %v", err)
		}
	}
}

func encryptIdentity(t *testing.T, identity, passphrase string, armored bool) []byte {
	t.Helper()
	r, err := age.NewScryptRecipient(passphrase)
	if err != nil {
		t.Fatal(err)
	}
	r.SetWorkFactor(10) // cheap for tests
	var buf bytes.Buffer
	var out = &buf
	var aw interface{ Close() error }
	dst := any(out).(interface{ Write([]byte) (int, error) })
	if armored {
		a := armor.NewWriter(out)
		aw, dst = a, a
	}
	w, err := age.Encrypt(dst, r)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(identity))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if aw != nil {
		aw.Close()
	}
	return buf.Bytes()
}

// buildTestPlugin builds testdata/age-plugin-enctest into a temporary
// directory and puts it first on PATH, where age's plugin client looks.
func buildTestPlugin(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "age-plugin-enctest"), "./testdata/age-plugin-enctest")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the test plugin: %v\n%s", err, out)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestAgePlugin exercises an age plugin end to end: a slot sealed to the
// plugin's recipient (the plugin runs to wrap), opened with its identity
// parsed from an identity file (the plugin runs to unwrap).
func TestAgePlugin(t *testing.T) {
	buildTestPlugin(t)
	f := newFixture(t)
	pkey := bytes.Repeat([]byte{0x42}, 32)
	recipient := plugin.EncodeRecipient("enctest", pkey)
	identity := plugin.EncodeIdentity("enctest", pkey)
	id, err := Add(f.c, f.master, NewSlot{Type: config.SlotAge, Label: "token", Recipient: recipient}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := f.c.Marshal()
	c, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := List(c)[len(c.Slots)-1]; got.Recipient != recipient || got.Type != config.SlotAge {
		t.Fatalf("List: %+v", got)
	}
	ids, err := ParseIdentities([]byte("# a plugin identity\n"+identity+"\n"), IdentityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Unlock(c, Credentials{Identities: ids})
	if err != nil || r.SlotID != id || !bytes.Equal(r.MasterKey, f.master) {
		t.Fatalf("unlock with the plugin: %v", err)
	}
	wrong, _ := ParseIdentities([]byte(plugin.EncodeIdentity("enctest", bytes.Repeat([]byte{1}, 32))), IdentityOptions{})
	if _, err := Unlock(c, Credentials{Identities: wrong}); !errors.Is(err, config.ErrNoSlotMatch) {
		t.Fatalf("wrong plugin identity: %v", err)
	}
	// A plugin that is not installed fails to seal, clearly.
	if _, err := Add(c, f.master, NewSlot{Type: config.SlotAge, Recipient: plugin.EncodeRecipient("absent", pkey)}, rand.Reader); !errors.Is(err, ErrRecipient) {
		t.Fatalf("missing plugin: %v", err)
	}
}

func TestFromFile(t *testing.T) {
	f := newFixture(t)
	for name, data := range map[string][]byte{
		"identity": []byte(f.identity.String() + "\n"),
		"keyfile":  testKeyfile,
		"password": append(bytes.Clone(testPassword), '\n'),
	} {
		t.Run(name, func(t *testing.T) {
			var cr Credentials
			if err := FromFile(data, IdentityOptions{}, &cr); err != nil {
				t.Fatal(err)
			}
			r, err := Unlock(f.c, cr)
			if err != nil || !bytes.Equal(r.MasterKey, f.master) {
				t.Fatalf("%v", err)
			}
		})
	}
}

func TestPaperKey(t *testing.T) {
	k := bytes.Repeat([]byte{0xab, 0x01}, 16)
	s := FormatPaperKey(k)
	if strings.Count(s, "\n") != 0 || strings.Count(s, "-") != 7 {
		t.Fatalf("paper key %q: want one line of eight dash-separated groups", s)
	}
	if got, err := ParsePaperKey([]byte(s)); err != nil || !bytes.Equal(got, k) {
		t.Fatalf("%q: %v", s, err)
	}
	if _, err := ParsePaperKey([]byte(s[:len(s)-1])); !errors.Is(err, ErrPaperKey) {
		t.Fatal(err)
	}
}

// TestAgeSlotTampered: an edit of any field of an age slot's header (its
// recipient, its age file, its label) stops the identity from opening it.
func TestAgeSlotTampered(t *testing.T) {
	f := newFixture(t)
	data, err := f.c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := f.c.SlotByID(4)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := age.GenerateX25519Identity()
	file := base64.StdEncoding.EncodeToString(s.Header.AgeFile)
	flipped := bytes.Clone(s.Header.AgeFile)
	flipped[len(flipped)-1] ^= 1
	for name, edit := range map[string][2]string{
		"recipient": {s.Header.Recipient, other.Recipient().String()},
		"age file":  {file, base64.StdEncoding.EncodeToString(flipped)},
		"label":     {`"laptop"`, `"laptoq"`},
	} {
		t.Run(name, func(t *testing.T) {
			edited := bytes.Replace(data, []byte(edit[0]), []byte(edit[1]), 1)
			if bytes.Equal(edited, data) {
				t.Fatal("edit did not apply")
			}
			c, err := config.Parse(edited)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Unlock(c, Credentials{Identities: []age.Identity{f.identity}}); !errors.Is(err, config.ErrNoSlotMatch) {
				t.Fatalf("got %v, want ErrNoSlotMatch", err)
			}
		})
	}
}
