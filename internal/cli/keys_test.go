package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"filippo.io/age"
	"filippo.io/age/armor"
	"filippo.io/age/plugin"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/internal/keyslot"
)

// buildAgePlugin builds internal/keyslot's test age plugin into a
// temporary directory and puts it first on PATH (the binary's children
// inherit it), as internal/keyslot's tests do. It returns the plugin's
// recipient and an identity file for it.
func buildAgePlugin(t *testing.T) (recipient, identityFile string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "age-plugin-enctest"), "../keyslot/testdata/age-plugin-enctest")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the test plugin: %v\n%s", err, out)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	pkey := bytes.Repeat([]byte{0x42}, 32)
	identityFile = filepath.Join(t.TempDir(), "token.identity")
	writeFile(t, identityFile, "# a test plugin's identity\n"+plugin.EncodeIdentity("enctest", pkey)+"\n")
	return plugin.EncodeRecipient("enctest", pkey), identityFile
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// x25519 returns a new X25519 identity's recipient and an identity file.
func x25519(t *testing.T) (recipient, identityFile string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	identityFile = filepath.Join(t.TempDir(), "x25519.identity")
	writeFile(t, identityFile, id.String()+"\n")
	return id.Recipient().String(), identityFile
}

var addedSlot = regexp.MustCompile(`Added key slot (\d+) `)

// keyAdd runs key add and returns the new slot's ID as printed.
func keyAdd(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	r := run(t, stdin, append([]string{"key", "add"}, args...)...)
	r.want(t, 0)
	m := addedSlot.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("key add printed no slot ID:\n%s", r.stdout)
	}
	return m[1]
}

// readConfig returns encryptfs.conf's bytes.
func readConfig(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameConfig fails unless encryptfs.conf still holds before.
func sameConfig(t *testing.T, dir string, before []byte) {
	t.Helper()
	if !bytes.Equal(readConfig(t, dir), before) {
		t.Fatal("encryptfs.conf changed")
	}
}

// putFile stores a plaintext file in the vault with import (so that the
// root has a name an age slot's key is checked against).
func putFile(t *testing.T, dir, name, data string, unlock ...string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), name)
	writeFile(t, src, data)
	args := append(append([]string{"import"}, unlock...), dir, src)
	run(t, "", args...).want(t, 0)
}

// TestKeysDoneWhen is issue 12's "Done when": an existing format-1
// vault gets upgraded, a hardware-key slot (an age plugin, here the test
// plugin) and a keyfile are added, the password slot is removed, and the
// vault mounts unattended with a systemd credential and with the plugin
// identity.
func TestKeysDoneWhen(t *testing.T) {
	fstest.RequireFUSE(t)
	recipient, identity := buildAgePlugin(t)
	dir, _ := newVault(t, "pw") // format 1
	pf := writePassfile(t, "pw")
	putFile(t, dir, "before.txt", "written under format 1", "--passfile", pf)

	r := run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "Upgraded") {
		t.Fatalf("upgrade said:\n%s", r.stdout)
	}
	r = run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "up to date") {
		t.Fatalf("second upgrade said:\n%s", r.stdout)
	}

	token := keyAdd(t, "", "--passfile", pf, "--recipient", recipient, "--label", "test token", dir)
	keyfile := filepath.Join(t.TempDir(), "vault-key")
	keyAdd(t, "", "--identity", identity, "--new-keyfile", keyfile, dir)
	if fi, err := os.Stat(keyfile); err != nil || fi.Size() != newKeyfileSize || fi.Mode().Perm() != 0o400 {
		t.Fatalf("new keyfile: %v %v", fi, err)
	}
	run(t, "", "key", "remove", "--identity", identity, dir, "1").want(t, 0)
	run(t, "", "ls", "--passfile", pf, dir).want(t, ExitWrongPassword)

	r = run(t, "", "key", "list", "--verify", "--keyfile", keyfile, "--json", dir)
	r.want(t, 0)
	var list keyListJSON
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err)
	}
	if !list.Verified || len(list.Slots) != 2 || list.Slots[0].Type != config.SlotAge ||
		list.Slots[0].Recipient != recipient || list.Slots[0].Label != "test token" || list.Slots[1].Type != config.SlotKeyfile {
		t.Fatalf("key list: %+v", list)
	}

	// Unattended, as systemd runs it: the keyfile as a credential.
	creds := t.TempDir()
	kf, _ := os.ReadFile(keyfile)
	if err := os.WriteFile(filepath.Join(creds, "vault-key"), kf, 0o400); err != nil {
		t.Fatal(err)
	}
	t.Setenv(credentialsDirEnv, creds)
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "-o", "credential=vault-key", dir, mnt).want(t, 0)
	if got, err := os.ReadFile(filepath.Join(mnt, "before.txt")); err != nil || string(got) != "written under format 1" {
		t.Fatalf("read through the credential mount: %q %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "boot.txt"), []byte("written at boot"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, "", "unmount", mnt).want(t, 0)

	// The hardware key (the plugin's identity), daemonized: the parent
	// runs the plugin, the child gets the master key.
	run(t, "", "mount", "--identity", identity, "--ro", dir, mnt).want(t, 0)
	if got, err := os.ReadFile(filepath.Join(mnt, "boot.txt")); err != nil || string(got) != "written at boot" {
		t.Fatalf("read through the identity mount: %q %v", got, err)
	}
	run(t, "", "unmount", mnt).want(t, 0)
	// And with the credential flag, in the foreground form's -o spelling
	// of the identity (fstab).
	run(t, "", dir, mnt, "-o", "ro,identity="+identity).want(t, 0)
	run(t, "", "unmount", mnt).want(t, 0)
	run(t, "", "mount", "--credential", "vault-key", "--ro", dir, mnt).want(t, 0)
	run(t, "", "unmount", mnt).want(t, 0)

	// The token's slot removed: its identity no longer opens (3), and
	// nothing is mounted or changed.
	run(t, "", "key", "remove", "--credential", "vault-key", dir, token).want(t, 0)
	before := readConfig(t, dir)
	r = run(t, "", "mount", "--identity", identity, dir, mnt)
	r.want(t, ExitWrongPassword)
	if !strings.Contains(r.stderr, "no key slot opens") || isMounted(t, mnt) {
		t.Fatalf("removed slot: %q", r.stderr)
	}
	sameConfig(t, dir, before)
}

// TestCredentialMissing: -o credential= without $CREDENTIALS_DIRECTORY
// or without the file is exit 7 with one line, before anything mounts.
func TestCredentialMissing(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2")
	mnt := t.TempDir()
	t.Setenv(credentialsDirEnv, "")
	r := run(t, "", "mount", "-f", "-o", "credential=vault-key", dir, mnt)
	r.want(t, ExitPassword)
	if !strings.Contains(r.stderr, "CREDENTIALS_DIRECTORY is not set") {
		t.Fatalf("stderr %q", r.stderr)
	}
	t.Setenv(credentialsDirEnv, t.TempDir())
	run(t, "", "mount", "-o", "credential=vault-key", dir, mnt).want(t, ExitPassword)
	run(t, "", "ls", "--credential", "../x", dir).want(t, ExitUsage)
	// A credential holding the password opens a password slot (and a
	// format-1 vault).
	creds := t.TempDir()
	writeFile(t, filepath.Join(creds, "pw"), "pw\n")
	t.Setenv(credentialsDirEnv, creds)
	run(t, "", "ls", "--credential", "pw", dir).want(t, 0)
	v1, _ := newVault(t, "pw")
	run(t, "", "ls", "--credential", "pw", v1).want(t, 0)
}

// TestIdentities: X25519 and passphrase-protected identity files, a wrong
// identity (3), and the warning when an age slot's key cannot be checked.
func TestIdentities(t *testing.T) {
	dir, recovery := newVault(t, "pw", "--format", "2")
	pf := writePassfile(t, "pw")
	recipient, identity := x25519(t)

	// An empty root cannot confirm an age slot's key: one warning line.
	keyAdd(t, "", "--passfile", pf, "--recipient", recipient, dir)
	r := run(t, "", "ls", "--identity", identity, dir)
	r.want(t, 0)
	if !strings.Contains(r.stderr, "warning: the vault's root is empty") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("no warning for an unverifiable key: %q", r.stderr)
	}
	putFile(t, dir, "a.txt", "x", "--identity", identity)
	r = run(t, "", "cat", "--identity", identity, dir, "a.txt")
	r.want(t, 0)
	if r.stdout != "x" || r.stderr != "" {
		t.Fatalf("cat with the identity: %q %q", r.stdout, r.stderr)
	}

	// A wrong identity: 3, one line, nothing changed.
	_, other := x25519(t)
	before := readConfig(t, dir)
	r = run(t, "", "ls", "--identity", other, dir)
	r.want(t, ExitWrongPassword)
	if !strings.Contains(r.stderr, "no key slot opens") {
		t.Fatalf("wrong identity: %q", r.stderr)
	}
	run(t, "", "key", "add", "--identity", other, "--recovery", dir).want(t, ExitWrongPassword)
	sameConfig(t, dir, before)
	// Not an identity file at all: 7.
	run(t, "", "ls", "--identity", pf, dir).want(t, ExitPassword)

	// A passphrase-protected identity file (age -p of the identity): the
	// passphrase comes from the terminal, or from stdin when it is not one.
	pid, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	protected := filepath.Join(t.TempDir(), "protected.age")
	writeFile(t, protected, string(encryptArmored(t, pid.String()+"\n", "correct horse")))
	keyAdd(t, "", "--passfile", pf, "--recipient", pid.Recipient().String(), "--label", "protected", dir)
	run(t, "correct horse\n", "ls", "--identity", protected, dir).want(t, 0)
	run(t, "wrong horse\n", "ls", "--identity", protected, dir).want(t, ExitWrongPassword)
	if r := runTTY(t, "correct horse\n", "ls", "--identity", protected, dir); r.code != 0 || !strings.Contains(r.stderr, "Passphrase for identity") {
		t.Fatalf("passphrase on a terminal: %d %q", r.code, r.stderr)
	}

	// --masterkey takes the recovery key init printed.
	run(t, recovery+"\n", "ls", "--masterkey", dir).want(t, 0)
	run(t, strings.Repeat("ab", 32)+"\n", "ls", "--masterkey", dir).want(t, ExitWrongPassword)
	// A format-1 vault refuses identities and keyfiles clearly (6).
	v1, _ := newVault(t, "pw")
	run(t, "", "ls", "--identity", identity, v1).want(t, ExitUnsupported)
}

// encryptArmored is age -p -a: data encrypted to a passphrase (cheap
// scrypt, for the test).
func encryptArmored(t *testing.T, data, passphrase string) []byte {
	t.Helper()
	rcpt, err := age.NewScryptRecipient(passphrase)
	if err != nil {
		t.Fatal(err)
	}
	rcpt.SetWorkFactor(10)
	var buf bytes.Buffer
	aw := armor.NewWriter(&buf)
	w, err := age.Encrypt(aw, rcpt)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(data))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	aw.Close()
	return buf.Bytes()
}

// TestKeyRefusals: each refusal is one line with its code, and leaves
// encryptfs.conf byte for byte as it was.
func TestKeyRefusals(t *testing.T) {
	dir, recovery := newVault(t, "pw", "--format", "2")
	pf := writePassfile(t, "pw")
	putFile(t, dir, "a.txt", "x", "--passfile", pf)
	keyfile := filepath.Join(t.TempDir(), "kf")
	kid := keyAdd(t, "", "--passfile", pf, "--new-keyfile", keyfile, dir)
	recipient, identity := x25519(t)
	keyAdd(t, "", "--passfile", pf, "--recipient", recipient, dir)

	// Removed slot: its keyfile no longer opens (3).
	run(t, "", "key", "remove", "--passfile", pf, dir, kid).want(t, 0)
	before := readConfig(t, dir)
	r := run(t, "", "ls", "--keyfile", keyfile, dir)
	r.want(t, ExitWrongPassword)
	sameConfig(t, dir, before)

	// Unknown ID and a bad ID: 13 and 2.
	r = run(t, "", "key", "remove", "--passfile", pf, dir, "99")
	r.want(t, ExitKeySlot)
	if !strings.Contains(r.stderr, "no key slot 99") {
		t.Fatalf("unknown slot: %q", r.stderr)
	}
	run(t, "", "key", "remove", "--passfile", pf, dir, "x").want(t, ExitUsage)
	sameConfig(t, dir, before)

	// A tampered slot (the recovery slot's label edited): the age slot
	// still opens, but the config's MAC does not verify (5), for opening
	// and for changing; nothing is written.
	tampered := bytes.Replace(before, []byte(`"Label": "recovery"`), []byte(`"Label": "recoverx"`), 1)
	if bytes.Equal(tampered, before) {
		t.Fatalf("no label to edit in:\n%s", before)
	}
	writeConfig(t, dir, tampered)
	for _, args := range [][]string{
		{"ls", "--identity", identity, dir},
		{"ls", "--passfile", pf, dir},
		{"key", "add", "--identity", identity, "--recovery", dir},
		{"key", "remove", "--identity", identity, dir, "2"},
	} {
		r = run(t, "", args...)
		r.want(t, ExitCorruptConfig)
		if !strings.Contains(r.stderr, "edited") {
			t.Fatalf("%v: %q", args, r.stderr)
		}
		sameConfig(t, dir, tampered)
	}
	writeConfig(t, dir, before)

	// A slot copied in from another vault (pointing at another master
	// key) opens nothing of this vault's: its wrap authenticates the
	// other vault's Params, whose VaultID differs (location binding), so
	// it does not even open here (3); a slot that did would fail the MAC
	// (5, the tampered case above).
	other, _ := newVault(t, "pw", "--format", "2")
	foreign := spliceSlot(t, before, readConfig(t, other))
	writeConfig(t, dir, foreign)
	r = run(t, "", "ls", "--passfile", pf, dir)
	r.want(t, ExitWrongPassword)
	sameConfig(t, dir, foreign)
	writeConfig(t, dir, before)

	// The last slot: 13. Remove down to one slot first.
	run(t, recovery+"\n", "key", "remove", "--masterkey", dir, "1").want(t, 0)
	run(t, "", "key", "remove", "--identity", identity, dir, "2").want(t, 0)
	before = readConfig(t, dir)
	r = run(t, "", "key", "remove", "--identity", identity, dir, "4")
	r.want(t, ExitKeySlot)
	if !strings.Contains(r.stderr, "last one") {
		t.Fatalf("last slot: %q", r.stderr)
	}
	sameConfig(t, dir, before)
}

// spliceSlot returns the config dst with its first slot replaced by the
// first slot of src (another vault's password slot: same type, another
// master key), byte for byte, the rest of dst as it is.
func spliceSlot(t *testing.T, dst, src []byte) []byte {
	t.Helper()
	first := func(b []byte) (int, int) {
		i := bytes.Index(b, []byte("\t\t{\n\t\t\t\"Header\""))
		j := bytes.Index(b[max(i, 0):], []byte("\n\t\t}"))
		if i < 0 || j < 0 {
			t.Fatalf("no slot in:\n%s", b)
		}
		return i, i + j + len("\n\t\t}")
	}
	di, dj := first(dst)
	si, sj := first(src)
	out := append(append(append([]byte(nil), dst[:di]...), src[si:sj]...), dst[dj:]...)
	if bytes.Equal(out, dst) {
		t.Fatal("splice changed nothing")
	}
	return out
}

// writeConfig replaces encryptfs.conf (mode 0400) with data.
func writeConfig(t *testing.T, dir string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, config.FileName)
	os.Chmod(p, 0o600)
	if err := os.WriteFile(p, data, 0o400); err != nil {
		t.Fatal(err)
	}
}

// TestForgedConfig: whoever can write CIPHERDIR replaces the config by
// one of their own whose age slot, sealed to the user's (public)
// recipient, holds their key. Opening with the identity is refused (5),
// nothing mounts and nothing is written.
func TestForgedConfig(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw", "--format", "2")
	pf := writePassfile(t, "pw")
	putFile(t, dir, "a.txt", "x", "--passfile", pf)
	recipient, identity := x25519(t)
	keyAdd(t, "", "--passfile", pf, "--recipient", recipient, dir)

	c, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	forged, master, err := keyslot.Create(c.Params, []keyslot.NewSlot{{Type: config.SlotAge, Label: "age", Recipient: recipient}}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	clear(master)
	data, err := forged.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	writeConfig(t, dir, data)
	before := hashTree(t, dir)
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	for _, args := range [][]string{
		{"ls", "--identity", identity, dir},
		{"mount", "--identity", identity, dir, mnt},
		{"key", "add", "--identity", identity, "--recovery", dir},
	} {
		r := run(t, "", args...)
		r.want(t, ExitCorruptConfig)
		if !strings.Contains(r.stderr, "forged") {
			t.Fatalf("%v: %q", args, r.stderr)
		}
	}
	if isMounted(t, mnt) {
		t.Fatal("a forged config mounted")
	}
	unchangedTree(t, dir, before)
}

// TestPasswdV2: passwd changes the password slot the current password
// opens; --slot sets one after unlocking with another credential.
func TestPasswdV2(t *testing.T) {
	dir, _ := newVault(t, "old", "--format", "2")
	oldPF, newPF, thirdPF := writePassfile(t, "old"), writePassfile(t, "new"), writePassfile(t, "third")
	keyfile := filepath.Join(t.TempDir(), "kf")
	keyAdd(t, "", "--passfile", oldPF, "--new-keyfile", keyfile, dir)
	r := run(t, "", append([]string{"passwd", "--passfile", oldPF, "--new-passfile", newPF, dir}, cheapKDF...)...)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "key slot 1") {
		t.Fatalf("passwd said %q", r.stdout)
	}
	run(t, "", "ls", "--passfile", oldPF, dir).want(t, ExitWrongPassword)
	run(t, "", "ls", "--passfile", newPF, dir).want(t, 0)
	// Forgotten password: set it with the keyfile.
	run(t, "", append([]string{"passwd", "--keyfile", keyfile, "--slot", "1", "--new-passfile", thirdPF, dir}, cheapKDF...)...).want(t, 0)
	run(t, "", "ls", "--passfile", thirdPF, dir).want(t, 0)
	before := readConfig(t, dir)
	run(t, "", append([]string{"passwd", "--keyfile", keyfile, "--slot", "3", "--new-passfile", oldPF, dir}, cheapKDF...)...).want(t, ExitKeySlot)
	sameConfig(t, dir, before)
}

// TestInitFormats: init makes format 2 by default (password and recovery
// slots), format 1 on request; reverse stays format 1.
func TestInitFormats(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2")
	r := run(t, "", "info", "--json", dir)
	r.want(t, 0)
	var info infoJSON
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil {
		t.Fatal(err)
	}
	if info.FormatVersion != 2 || len(info.Slots) != 2 || info.Slots[0].Type != config.SlotPassword ||
		info.Slots[0].KDF == nil || info.Slots[0].KDF.MemoryKiB != 8192 || info.Slots[1].Type != config.SlotRecovery {
		t.Fatalf("info: %+v", info)
	}
	def := filepath.Join(t.TempDir(), "v")
	r = run(t, "", append(append([]string{"init", "--passfile", writePassfile(t, "pw"), "--no-recovery-key"}, cheapKDF...), def)...)
	r.want(t, 0)
	if strings.Contains(r.stdout, "recovery key") || !strings.Contains(r.stdout, "format 2") {
		t.Fatalf("init --no-recovery-key said:\n%s", r.stdout)
	}
	run(t, "", "init", "--reverse", "--format", "2", "--passfile", writePassfile(t, "pw"), t.TempDir()).want(t, ExitUsage)
	run(t, "", "init", "--format", "3", "--passfile", writePassfile(t, "pw"), filepath.Join(t.TempDir(), "v")).want(t, ExitUsage)
	// key commands on a format-1 vault: 6, with the way out.
	v1, _ := newVault(t, "pw")
	r = run(t, "", "key", "list", v1)
	r.want(t, ExitUnsupported)
	if !strings.Contains(r.stderr, "upgrade") {
		t.Fatalf("key list on format 1: %q", r.stderr)
	}
	// upgrade: wrong password 3 and nothing changed; a reverse PLAINDIR 6.
	before := readConfig(t, v1)
	run(t, "", "upgrade", "--passfile", writePassfile(t, "nope"), v1).want(t, ExitWrongPassword)
	sameConfig(t, v1, before)
	plain := t.TempDir()
	run(t, "", append(append([]string{"init", "--reverse", "--passfile", writePassfile(t, "pw")}, cheapKDF...), plain)...).want(t, 0)
	run(t, "", "upgrade", "--passfile", writePassfile(t, "pw"), plain).want(t, ExitUnsupported)
}

// TestUpgradeKeepsMasterKey: after upgrade the master key init printed
// still opens the vault (--masterkey: the config MAC checks it), and the
// files written before read the same.
func TestUpgradeKeepsMasterKey(t *testing.T) {
	dir, key := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	putFile(t, dir, "a.txt", "same bytes", "--passfile", pf)
	run(t, "", "upgrade", "--passfile", pf, dir).want(t, 0)
	r := run(t, key+"\n", "cat", "--masterkey", dir, "a.txt")
	r.want(t, 0)
	if r.stdout != "same bytes" {
		t.Fatalf("cat after upgrade: %q", r.stdout)
	}
}
