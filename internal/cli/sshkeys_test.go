package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sshKeygen makes an SSH key pair with ssh-keygen (openssh-client,
// scripts/setup.sh installs it) and returns the private key file and the
// public key line.
func sshKeygen(t *testing.T, typ, passphrase string, extra ...string) (private, public string) {
	t.Helper()
	keygen := requireTool(t, "ssh-keygen")
	private = filepath.Join(t.TempDir(), "id_"+typ)
	args := []string{"-q", "-t", typ, "-N", passphrase, "-C", "user@" + typ, "-f", private}
	if typ == "rsa" {
		args = append(args, "-b", "2048")
	}
	args = append(args, extra...)
	if out, err := exec.Command(keygen, args...).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(private + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return private, strings.TrimSpace(string(pub))
}

// unlockedBy runs key list --verify with args and returns the ID of the
// slot that opened ("" if none did).
func unlockedBy(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	r := run(t, stdin, append([]string{"key", "list", "--verify"}, args...)...)
	r.want(t, 0)
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasSuffix(line, "(unlocked this time)") {
			return strings.Fields(line)[0]
		}
	}
	t.Fatalf("no slot marked as the one that opened:\n%s", r.stdout)
	return ""
}

// TestSSHRecipients: SSH keys work as age's do. key add -r "$(cat
// id_ed25519.pub)" adds an age slot that -i id_ed25519 opens (before,
// the ssh line was taken for a plugin recipient: "invalid recipient
// encoding: mixed case"); -R reads a recipients file (comments, one slot
// per recipient); ssh-rsa too; a passphrase-protected key asks for its
// passphrase; other SSH key types are refused in one line.
func TestSSHRecipients(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2")
	edPriv, edPub := sshKeygen(t, "ed25519", "")
	rsaPriv, rsaPub := sshKeygen(t, "rsa", "")
	encPriv, encPub := sshKeygen(t, "ed25519", "sesame")

	ed := keyAdd(t, "pw\n", "-r", edPub, dir)
	if got := unlockedBy(t, "", "-i", edPriv, dir); got != ed {
		t.Fatalf("-i %s opened slot %s, want %s", edPriv, got, ed)
	}
	// The long form and the identity on stdin.
	priv, err := os.ReadFile(edPriv)
	if err != nil {
		t.Fatal(err)
	}
	if got := unlockedBy(t, string(priv), "--identity", "-", dir); got != ed {
		t.Fatalf("-i - opened slot %s, want %s", got, ed)
	}

	// A recipients file, as age -R: comments, blank lines, two keys.
	rf := filepath.Join(t.TempDir(), "recipients")
	writeFile(t, rf, "# team\n\n"+rsaPub+"\n# the one with a passphrase\n"+encPub+"\n")
	r := run(t, "pw\n", "key", "add", "-R", rf, dir)
	r.want(t, 0)
	if n := strings.Count(r.stdout, "Added key slot"); n != 2 {
		t.Fatalf("-R with two recipients added %d slots:\n%s", n, r.stdout)
	}
	if !strings.Contains(r.stdout, `label "ssh-rsa"`) || !strings.Contains(r.stdout, `label "ssh-ed25519 2"`) {
		t.Fatalf("labels of the new slots:\n%s", r.stdout)
	}
	rsaID := unlockedBy(t, "", "-i", rsaPriv, dir)
	encID := unlockedBy(t, "sesame\n", "-i", encPriv, dir)
	if rsaID == ed || encID == ed || rsaID == encID {
		t.Fatalf("slots %s %s %s", ed, rsaID, encID)
	}
	// A wrong passphrase opens nothing.
	r = run(t, "wrong\n", "key", "list", "--verify", "-i", encPriv, dir)
	if r.code == 0 || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("wrong passphrase: exit %d, stderr %q", r.code, r.stderr)
	}

	// An encrypted key in the old PEM format carries no public key (age
	// would read the .pub beside it): one line, how to convert it, 7.
	pemPriv, pemPub := sshKeygen(t, "rsa", "sesame", "-m", "PEM")
	keyAdd(t, "pw\n", "-r", pemPub, dir)
	r = run(t, "sesame\n", "key", "list", "--verify", "-i", pemPriv, dir)
	r.want(t, ExitPassword)
	if !strings.Contains(r.stderr, "ssh-keygen -p -m RFC4716") {
		t.Fatalf("old-format encrypted key: %s", r.stderr)
	}

	// -R - reads stdin (the unlock password then from a file).
	rsa2Priv, rsa2Pub := sshKeygen(t, "rsa", "")
	keyAdd(t, rsa2Pub+"\n", "-R", "-", "--passfile", writePassfile(t, "pw"), dir)
	unlockedBy(t, "", "-i", rsa2Priv, dir)
	run(t, rsa2Pub+"\n", "key", "add", "-R", "-", dir).want(t, ExitUsage)

	// Refusals: one line, the usage code, nothing quoted but the type.
	before := readConfig(t, dir)
	for _, tc := range []struct{ recipient, want string }{
		{"ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7opKgwFB9nkt5YRrYMjNuG5N87uRgg6CLrbo5wAdT/y6v0mKV0U2w0WZ2YB/++Tpockg= x", "type ecdsa-sha2-nistp256 are not supported"},
		{"ssh-ed25519 AAAA", "not an SSH public key"},
		{"AGE-SECRET-KEY-1QQQ", "not a recipient"},
		{"hello", "unknown kind of recipient"},
	} {
		r := run(t, "pw\n", "key", "add", "-r", tc.recipient, dir)
		r.want(t, ExitUsage)
		if !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 || strings.Contains(r.stderr, "keyslot:") {
			t.Errorf("-r %.20q: stderr %q, want one line with %q", tc.recipient, r.stderr, tc.want)
		}
	}
	if string(readConfig(t, dir)) != string(before) {
		t.Fatal("a refused key add changed the config")
	}
}
