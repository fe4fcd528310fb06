package session

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crashsim"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/tree"
)

var keyfileBytes = []byte("session test keyfile, random enough")

func cheapKDF(t *testing.T) KDFParams {
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
	s, master, err := CreateWith(dir, []keyslot.NewSlot{
		{Type: config.SlotPassword, Label: "pw", Password: password, KDF: cheapKDF(t)},
		{Type: config.SlotAge, Label: "laptop", Recipient: id.Recipient().String()},
	}, CreateOptions{Params: config.NewParamsV2(string(AES256GCM), DefaultChunkSize)})
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

func TestOpenWithEachDoor(t *testing.T) {
	dir, master, id := newV2Vault(t, "a.txt")
	s, err := OpenWith(dir, keyslot.Credentials{Identities: []age.Identity{id}, Password: func() ([]byte, error) {
		t.Fatal("password asked although the age slot opens")
		return nil, nil
	}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.KeyCheck() != KeyVerified {
		t.Fatalf("KeyCheck %v", s.KeyCheck())
	}
	if id, typ := s.UnlockedBy(); id != 2 || typ != config.SlotAge {
		t.Fatalf("UnlockedBy %d %s", id, typ)
	}
	s.Close()
	// The format-1 doors open format 2 too.
	if s, err = Open(dir, password, Options{}); err != nil {
		t.Fatalf("Open with the password: %v", err)
	}
	s.Close()
	if s, err = OpenWithMasterKey(dir, master, Options{}); err != nil {
		t.Fatalf("OpenWithMasterKey: %v", err)
	}
	s.Close()
	if _, err = OpenWithMasterKey(dir, make([]byte, 32), Options{}); !errors.Is(err, ErrWrongMasterKey) {
		t.Fatalf("wrong master key: %v", err)
	}
	if _, err = Open(dir, []byte("wrong"), Options{}); !errors.Is(err, config.ErrWrongPassword) {
		t.Fatalf("wrong password: %v", err)
	}
}

// TestForgedConfig: the storage replaces the config with one of its own
// making, whose age slot (sealed to the user's public recipient) holds the
// attacker's master key with a valid MAC. Opening with the identity must
// refuse it and write nothing.
func TestForgedConfig(t *testing.T) {
	dir, _, id := newV2Vault(t, "real.txt")
	forged, attackerKey, err := keyslot.Create(config.NewParamsV2(string(AES256GCM), DefaultChunkSize),
		[]keyslot.NewSlot{{Type: config.SlotAge, Label: "laptop", Recipient: id.Recipient().String()}}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	data, err := forged.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, config.FileName)
	os.Chmod(conf, 0o600)
	if err := os.WriteFile(conf, data, 0o400); err != nil {
		t.Fatal(err)
	}
	open := func() error {
		s, err := OpenWith(dir, keyslot.Credentials{Identities: []age.Identity{id}}, Options{})
		if err == nil {
			s.Close()
		}
		return err
	}
	if err := open(); !errors.Is(err, ErrForgedConfig) {
		t.Fatalf("forged config: %v, want ErrForgedConfig", err)
	}
	// The attacker also adds a name of their own to the root: the real
	// names still fail, so it is still refused.
	as, err := New(dir, forged.Params, attackerKey, Options{})
	if err != nil {
		t.Fatal(err)
	}
	addRootFile(t, as, "planted.txt")
	as.Close()
	if err := open(); !errors.Is(err, ErrForgedConfig) {
		t.Fatalf("forged config with a planted name: %v, want ErrForgedConfig", err)
	}
	if !bytes.Equal(readConfig(t, dir), data) {
		t.Fatal("the config file changed")
	}
	// An empty vault cannot be checked: opened, but reported.
	empty, _, id2 := newV2Vault(t)
	s, err := OpenWith(empty, keyslot.Credentials{Identities: []age.Identity{id2}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.KeyCheck() != KeyUnverifiable {
		t.Fatalf("empty vault: KeyCheck %v", s.KeyCheck())
	}
}

// TestSwappedWrappedRefused: a config edited to point a slot at another
// key (the Wrapped values of two slots swapped) is refused by every
// credential and left as it is.
func TestSwappedWrappedRefused(t *testing.T) {
	dir, _, id := newV2Vault(t, "a")
	c, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	orig := string(readConfig(t, dir))
	w := func(i int) string { return b64(c.Slots[i].Wrapped) }
	edited := strings.Replace(strings.Replace(strings.Replace(orig, w(0), "@", 1), w(1), w(0), 1), "@", w(1), 1)
	if edited == orig {
		t.Fatal("no edit")
	}
	conf := filepath.Join(dir, config.FileName)
	os.Chmod(conf, 0o600)
	os.WriteFile(conf, []byte(edited), 0o400)
	for name, cr := range map[string]keyslot.Credentials{
		"password": {Password: pwFunc(password)},
		"age":      {Identities: []age.Identity{id}},
	} {
		if _, err := OpenWith(dir, cr, Options{}); !errors.Is(err, config.ErrNoSlotMatch) && !errors.Is(err, config.ErrWrongPassword) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if string(readConfig(t, dir)) != edited {
		t.Fatal("the config file changed")
	}
}

func TestSessionKeyManagement(t *testing.T) {
	dir, master, id := newV2Vault(t, "a")
	s, err := OpenWith(dir, keyslot.Credentials{Password: pwFunc(password)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kid, err := s.AddSlot(keyslot.NewSlot{Type: config.SlotKeyfile, Label: "usb", Keyfile: keyfileBytes})
	if err != nil || kid != 3 {
		t.Fatalf("AddSlot = %d, %v", kid, err)
	}
	s2, err := OpenWith(dir, keyslot.Credentials{Keyfiles: [][]byte{keyfileBytes}}, Options{})
	if err != nil {
		t.Fatalf("open with the new keyfile slot: %v", err)
	}
	s2.Close()
	if err := s.RemoveSlot(2); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWith(dir, keyslot.Credentials{Identities: []age.Identity{id}}, Options{}); !errors.Is(err, config.ErrNoSlotMatch) {
		t.Fatalf("removed age slot: %v", err)
	}
	if _, err := s.ChangePassword(password, []byte("new pw"), cheapKDF(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, password, Options{}); !errors.Is(err, config.ErrWrongPassword) {
		t.Fatalf("old password after change: %v", err)
	}
	if err := s.RemoveSlot(1); err != nil {
		t.Fatal(err)
	}
	before := readConfig(t, dir)
	if err := s.RemoveSlot(3); !errors.Is(err, config.ErrLastSlot) {
		t.Fatalf("last slot: %v", err)
	}
	if err := s.RemoveSlot(9); !errors.Is(err, config.ErrUnknownSlot) {
		t.Fatalf("unknown slot: %v", err)
	}
	if !bytes.Equal(before, readConfig(t, dir)) {
		t.Fatal("a refused edit changed the config")
	}
	infos, _ := s.Slots()
	if len(infos) != 1 || infos[0].ID != 3 {
		t.Fatalf("Slots = %+v", infos)
	}
	s3, err := OpenWithMasterKey(dir, master, Options{})
	if err != nil {
		t.Fatalf("master key after edits: %v", err)
	}
	defer s3.Close()
	// A session not opened through its slots has no keyring.
	if _, err := s3.AddSlot(keyslot.NewSlot{}); !errors.Is(err, ErrNoKeyring) {
		t.Fatalf("AddSlot on a master-key session: %v", err)
	}
}

func TestUpgradeInPlace(t *testing.T) {
	dir, master := newVault(t)
	s, err := Open(dir, password, Options{})
	if err != nil {
		t.Fatal(err)
	}
	addRootFile(t, s, "kept.txt")
	s.Close()
	files := func() map[string][]byte {
		m := map[string][]byte{}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != config.FileName {
				b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				m[e.Name()] = b
			}
		}
		return m
	}
	before := files()
	if err := Upgrade(dir, []byte("wrong"), cheapKDF(t), Options{}); !errors.Is(err, config.ErrWrongPassword) {
		t.Fatalf("wrong password: %v", err)
	}
	if err := Upgrade(dir, password, cheapKDF(t), Options{}); err != nil {
		t.Fatal(err)
	}
	after := files()
	if len(after) != len(before) {
		t.Fatal("upgrade changed the vault's files")
	}
	for k, v := range before {
		if !bytes.Equal(after[k], v) {
			t.Fatalf("upgrade changed %s", k)
		}
	}
	c, err := config.Load(dir)
	if err != nil || !c.IsV2() {
		t.Fatalf("after upgrade: %v", err)
	}
	s, err = OpenWith(dir, keyslot.Credentials{Password: pwFunc(password)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if checked, err := s.CheckMasterKey(); !checked || err != nil {
		t.Fatalf("upgraded vault's names: %v %v", checked, err)
	}
	if _, err := OpenWithMasterKey(dir, master, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Upgrade(dir, password, cheapKDF(t), Options{}); !errors.Is(err, config.ErrNotV1) {
		t.Fatalf("upgrade twice: %v", err)
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestConfigChangedRefused: a session whose config was changed on disk
// since it opened (another key add) refuses to overwrite that change.
func TestConfigChangedRefused(t *testing.T) {
	dir, _, _ := newV2Vault(t, "a")
	open := func() *Session {
		s, err := OpenWith(dir, keyslot.Credentials{Password: pwFunc(password)}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s1, s2 := open(), open()
	if _, err := s1.AddSlot(keyslot.NewSlot{Type: config.SlotKeyfile, Keyfile: keyfileBytes}); err != nil {
		t.Fatal(err)
	}
	after := readConfig(t, dir)
	if _, err := s2.AddSlot(keyslot.NewSlot{Type: config.SlotKeyfile, Keyfile: keyfileBytes}); !errors.Is(err, ErrConfigChanged) {
		t.Fatalf("stale session: %v", err)
	}
	if !bytes.Equal(after, readConfig(t, dir)) {
		t.Fatal("the stale session wrote the config")
	}
	// The session that wrote may go on.
	if err := s1.RemoveSlot(3); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeCrash: a crash at any point of Upgrade, with any of the
// writes not yet made durable lost or kept, leaves a config that opens
// with the password, as format 1 or format 2, and the vault's names
// intact (internal/crashsim replays the recorded changes).
func TestUpgradeCrash(t *testing.T) {
	dir, _ := newVault(t)
	s, err := Open(dir, password, Options{})
	if err != nil {
		t.Fatal(err)
	}
	addRootFile(t, s, "kept.txt")
	s.Close()
	rec, err := crashsim.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Upgrade(dir, password, cheapKDF(t), Options{Backing: backing.NewFS(rec)}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	versions := map[int]bool{}
	for k := 0; k <= rec.Len(); k++ {
		for _, keepAll := range []bool{false, true} {
			st, err := rec.StateAt(k, func(int) bool { return keepAll })
			if err != nil {
				t.Fatal(err)
			}
			sdir := t.TempDir()
			if err := st.Materialize(sdir); err != nil {
				t.Fatal(err)
			}
			c, err := config.Load(sdir)
			if err != nil {
				t.Fatalf("crash at %d (keep %v): %v", k, keepAll, err)
			}
			s, err := OpenWith(sdir, keyslot.Credentials{Password: pwFunc(password)}, Options{})
			if err != nil {
				t.Fatalf("crash at %d (keep %v): open: %v", k, keepAll, err)
			}
			if checked, err := s.CheckMasterKey(); !checked || err != nil {
				t.Fatalf("crash at %d: names: %v %v", k, checked, err)
			}
			s.Close()
			versions[c.Params.FormatVersion] = true
		}
	}
	if !versions[1] || !versions[2] {
		t.Fatalf("crash states saw formats %v, want both", versions)
	}
}

// TestReverseRefusesV2: a format-2 config where a reverse config belongs
// is refused by both reverse doors, before any password is tried.
func TestReverseRefusesV2(t *testing.T) {
	dir, master, _ := newV2Vault(t)
	data := readConfig(t, dir)
	plain := t.TempDir()
	if err := os.WriteFile(filepath.Join(plain, config.ReverseFileName), data, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReverse(plain, password, Options{}); !errors.Is(err, config.ErrReverseV2) {
		t.Fatalf("OpenReverse: %v", err)
	}
	if _, err := OpenReverseWithMasterKey(plain, master, Options{}); !errors.Is(err, config.ErrReverseV2) {
		t.Fatalf("OpenReverseWithMasterKey: %v", err)
	}
}

// TestRevokeCrash: a crash at any point of a revoke, with any of the
// writes not yet made durable lost or kept, leaves the old config (the
// old password opens it, epoch 0) or the new one (the new password and
// the age identity open it, epoch 1), never neither; the vault's names
// decrypt in both (internal/crashsim replays the recorded changes).
func TestRevokeCrash(t *testing.T) {
	vaultID := bytes.Repeat([]byte{9}, 16)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, master, err := CreateWith(dir, []keyslot.NewSlot{
		{Type: config.SlotPassword, Label: "pw", Password: password, KDF: cheapKDF(t)},
		{Type: config.SlotAge, Label: "laptop", Recipient: id.Recipient().String()},
	}, CreateOptions{Params: config.NewParamsV2(string(AES256GCM), DefaultChunkSize), Options: Options{BoundVaultID: vaultID}})
	if err != nil {
		t.Fatal(err)
	}
	clear(master)
	addBoundRootFile(t, s, "kept.txt")
	s.Close()
	rec, err := crashsim.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err = OpenWith(dir, keyslot.Credentials{Password: pwFunc(password)}, Options{Backing: backing.NewFS(rec), BoundVaultID: vaultID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revoke(keyslot.RevokeSpec{PasswordSlot: 1, NewPassword: []byte("new pw"), KDF: cheapKDF(t)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	epochs := map[uint32]bool{}
	for k := 0; k <= rec.Len(); k++ {
		for _, keepAll := range []bool{false, true} {
			st, err := rec.StateAt(k, func(int) bool { return keepAll })
			if err != nil {
				t.Fatal(err)
			}
			sdir := t.TempDir()
			if err := st.Materialize(sdir); err != nil {
				t.Fatal(err)
			}
			c, err := config.Load(sdir)
			if err != nil {
				t.Fatalf("crash at %d (keep %v): %v", k, keepAll, err)
			}
			pw, other := password, []byte("new pw")
			if c.Epoch() == 1 {
				pw, other = other, pw
			}
			o := Options{BoundVaultID: vaultID}
			if _, err := OpenWith(sdir, keyslot.Credentials{Password: pwFunc(other)}, o); !errors.Is(err, config.ErrWrongPassword) {
				t.Fatalf("crash at %d: epoch %d opened with the other password: %v", k, c.Epoch(), err)
			}
			for _, cr := range []keyslot.Credentials{{Password: pwFunc(pw)}, {Identities: []age.Identity{id}}} {
				s, err := OpenWith(sdir, cr, o)
				if err != nil {
					t.Fatalf("crash at %d (keep %v, epoch %d): open: %v", k, keepAll, c.Epoch(), err)
				}
				if checked, err := s.CheckMasterKey(); !checked || err != nil {
					t.Fatalf("crash at %d: names: %v %v", k, checked, err)
				}
				if s.Epoch() != c.Epoch() {
					t.Fatalf("crash at %d: session epoch %d, config %d", k, s.Epoch(), c.Epoch())
				}
				s.Close()
			}
			epochs[c.Epoch()] = true
		}
	}
	if !epochs[0] || !epochs[1] {
		t.Fatalf("crash states saw epochs %v, want 0 and 1", epochs)
	}
}

// addBoundRootFile is addRootFile for a vault with location binding.
func addBoundRootFile(t *testing.T, s *Session, name string) {
	t.Helper()
	rootfd, err := backing.OpenRoot(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close(rootfd)
	id, err := s.Tree().DirIDs().ReadRoot(rootfd)
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

// TestRevokeRules: a revoke refuses a vault whose content records no
// epochs, and a slot it cannot carry over without its credential (the
// config unchanged); with the keyfile given again it carries the keyfile
// slot, Remove drops a slot, a second revoke makes epoch 2, and the
// current key opens everything through the master-key door (the mount's
// daemon).
func TestRevokeRules(t *testing.T) {
	unbound, _, _ := newV2Vault(t)
	s, err := OpenWith(unbound, keyslot.Credentials{Password: pwFunc(password)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := readConfig(t, unbound)
	if _, err := s.Revoke(keyslot.RevokeSpec{PasswordSlot: 1, NewPassword: []byte("x"), KDF: cheapKDF(t)}); !errors.Is(err, ErrRevokeUnbound) {
		t.Fatalf("revoke on an unbound vault: %v", err)
	}
	s.Close()
	if !bytes.Equal(before, readConfig(t, unbound)) {
		t.Fatal("a refused revoke changed the config")
	}

	vaultID := bytes.Repeat([]byte{4}, 16)
	o := Options{BoundVaultID: vaultID}
	dir := t.TempDir()
	s, master, err := CreateWith(dir, []keyslot.NewSlot{
		{Type: config.SlotPassword, Label: "pw", Password: password, KDF: cheapKDF(t)},
		{Type: config.SlotKeyfile, Label: "usb", Keyfile: keyfileBytes},
		{Type: config.SlotPassword, Label: "other", Password: []byte("other"), KDF: cheapKDF(t)},
	}, CreateOptions{Params: config.NewParamsV2(string(AES256GCM), DefaultChunkSize), Options: o})
	if err != nil {
		t.Fatal(err)
	}
	clear(master)
	addBoundRootFile(t, s, "a")
	s.Close()
	s, err = OpenWith(dir, keyslot.Credentials{Password: pwFunc(password)}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before = readConfig(t, dir)
	spec := keyslot.RevokeSpec{PasswordSlot: 1, NewPassword: []byte("new"), KDF: cheapKDF(t)}
	_, err = s.Revoke(spec)
	var need *keyslot.NeedsCredentialError
	if !errors.As(err, &need) || len(need.Slots) != 2 || need.Slots[0].ID != 2 || need.Slots[1].ID != 3 {
		t.Fatalf("revoke without the keyfile and the other password: %v", err)
	}
	if !bytes.Equal(before, readConfig(t, dir)) {
		t.Fatal("a refused revoke changed the config")
	}
	spec.Keyfiles, spec.Passwords = [][]byte{keyfileBytes}, [][]byte{[]byte("wrong"), []byte("other")}
	if e, err := s.Revoke(spec); err != nil || e != 1 {
		t.Fatalf("revoke = %d, %v", e, err)
	}
	s2, err := Open(dir, []byte("other"), o)
	if err != nil {
		t.Fatalf("password slot 3, carried with its password: %v", err)
	}
	s2.Close()
	// The session goes on with the new config and key: a second revoke.
	spec.Remove, spec.Passwords, spec.NewPassword = 3, nil, []byte("newer")
	if e, err := s.Revoke(spec); err != nil || e != 2 {
		t.Fatalf("second revoke = %d, %v", e, err)
	}
	if infos, _ := s.Slots(); len(infos) != 2 || infos[0].ID != 1 || infos[1].ID != 2 {
		t.Fatalf("slots after revokes: %+v", infos)
	}
	current := s.MasterKey()
	defer clear(current)
	for _, open := range []func() (*Session, error){
		func() (*Session, error) {
			return OpenWith(dir, keyslot.Credentials{Keyfiles: [][]byte{keyfileBytes}}, o)
		},
		func() (*Session, error) { return OpenWithMasterKey(dir, current, o) },
		func() (*Session, error) { return Open(dir, []byte("newer"), o) },
	} {
		s2, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if checked, err := s2.CheckMasterKey(); !checked || err != nil || s2.Epoch() != 2 {
			t.Fatalf("epoch %d, names: %v %v", s2.Epoch(), checked, err)
		}
		s2.Close()
	}
	// Without binding the config's epochs are refused, not misread.
	if _, err := Open(dir, []byte("newer"), Options{}); !errors.Is(err, ErrRevokeUnbound) {
		t.Fatalf("epochs without binding: %v", err)
	}
}
