package keyslot

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"filippo.io/age"
	"golang.org/x/crypto/ssh"
)

// sshEd25519 returns a new ssh-ed25519 public key line and its private
// key in the OpenSSH format.
func sshEd25519(t testing.TB) (pub string, priv []byte) {
	t.Helper()
	pk, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spk, err := ssh.NewPublicKey(pk)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(sk, "test")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(spk))) + " user@host", pem.EncodeToMemory(block)
}

// TestParseRecipientsFile: age -R's format: comments and blank lines
// skipped, each line a recipient of any kind; errors name the line.
func TestParseRecipientsFile(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	sshPub, sshPriv := sshEd25519(t)
	got, err := ParseRecipientsFile([]byte("# team\n\n" + id.Recipient().String() + "\r\n  " + sshPub + "\n"))
	if err != nil || len(got) != 2 || got[1] != sshPub {
		t.Fatalf("ParseRecipientsFile = %q, %v", got, err)
	}
	for _, bad := range []string{"", "# only a comment\n", "age1nope\n", id.String() + "\n", "ssh-ed25519 AAAA\n"} {
		if _, err := ParseRecipientsFile([]byte(bad)); !errors.Is(err, ErrRecipient) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	// The SSH key as a slot's recipient and identity, through the age file.
	r, err := ParseRecipient(sshPub, nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	file, err := sealAgeFile(r, secret)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := ParseIdentities(sshPriv, IdentityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openAgeFile(file, ids); err != nil {
		t.Fatalf("the SSH identity does not open its slot's age file: %v", err)
	}
}

func FuzzParseRecipientsFile(f *testing.F) {
	pub, _ := sshEd25519(f)
	f.Add([]byte("# c\n\n" + pub + "\nage1\n"))
	f.Add([]byte("ecdsa-sha2-nistp256 AAAA x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseRecipientsFile(data)
		if err == nil && len(got) == 0 {
			t.Fatal("no error and no recipients")
		}
	})
}
