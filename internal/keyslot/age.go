package keyslot

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"filippo.io/age"
	"filippo.io/age/agessh"
	"filippo.io/age/armor"
	"filippo.io/age/plugin"
	"github.com/encryptfs/encryptfs/internal/config"
	"golang.org/x/crypto/ssh"
)

// MaxIdentityFile bounds an identity file read into memory (age's own
// command caps private key files at 16 MiB; real ones are under 1 KiB, a
// passphrase-protected one under 2 KiB).
const MaxIdentityFile = 1 << 20

// IdentityOptions say how ParseIdentities treats what it cannot do alone.
type IdentityOptions struct {
	// Passphrase is asked, at most once per file and only when a slot is
	// tried with it, for the passphrase of a passphrase-protected
	// (age-encrypted, scrypt) identity file. Nil: such a file fails.
	Passphrase func() ([]byte, error)
	// UI is how age plugins talk to the user (PIN prompts, touch
	// requests); plugin.NewTerminalUI in the CLI. Nil: NonInteractiveUI.
	UI *plugin.ClientUI
}

// NonInteractiveUI is the plugin UI used when none is given (a systemd
// unit, a test): messages are dropped, and a plugin that asks for a value
// or a confirmation gets an error (age's client would crash on a nil UI).
func NonInteractiveUI() *plugin.ClientUI {
	refuse := errors.New("keyslot: the age plugin asked for input, and no UI was given")
	return &plugin.ClientUI{
		DisplayMessage: func(name, message string) error { return nil },
		RequestValue:   func(name, prompt string, secret bool) (string, error) { return "", refuse },
		Confirm:        func(name, prompt, yes, no string) (bool, error) { return false, refuse },
	}
}

func uiOrDefault(ui *plugin.ClientUI) *plugin.ClientUI {
	if ui == nil {
		return NonInteractiveUI()
	}
	return ui
}

// ParseIdentities parses an age identity file: lines of X25519
// ("AGE-SECRET-KEY-1..."), post-quantum hybrid ("AGE-SECRET-KEY-PQ-1...")
// or plugin ("AGE-PLUGIN-NAME-1...") identities, with blank lines and #
// comments; or an age-encrypted file (binary or armored) holding such
// lines, protected by a passphrase (decrypted lazily, o.Passphrase); or
// an SSH private key, ssh-ed25519 or ssh-rsa, as age takes it (agessh),
// whose passphrase, if it has one, is asked as an identity file's. An
// error never quotes the file (it holds private keys).
func ParseIdentities(data []byte, o IdentityOptions) ([]age.Identity, error) {
	if len(data) > MaxIdentityFile {
		return nil, fmt.Errorf("%w: identity file larger than %d bytes", ErrIdentity, MaxIdentityFile)
	}
	trimmed := bytes.TrimSpace(data)
	switch {
	case bytes.HasPrefix(data, []byte("age-encryption.org/")) || bytes.HasPrefix(trimmed, []byte(armor.Header)):
		return []age.Identity{&encryptedIdentity{contents: bytes.Clone(data), opts: o}}, nil
	case bytes.HasPrefix(trimmed, []byte("-----BEGIN")):
		return parseSSHIdentity(trimmed, o)
	}
	return parseIdentityLines(data, o.UI)
}

// parseSSHIdentity parses an SSH private key as age does (agessh): an
// unencrypted ssh-ed25519 or ssh-rsa key, or an encrypted one in the
// OpenSSH format (which carries its public key), decrypted with
// o.Passphrase the first time a slot is tried with it. An encrypted key
// in an older format (no public key in the file) is refused: age would
// read the .pub file beside it; "ssh-keygen -p -m RFC4716" converts it.
func parseSSHIdentity(pemBytes []byte, o IdentityOptions) ([]age.Identity, error) {
	id, err := agessh.ParseIdentity(pemBytes)
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		if missing.PublicKey == nil {
			return nil, fmt.Errorf("%w: the SSH private key is passphrase-protected in an old format without its public key; convert it with ssh-keygen -p -m RFC4716", ErrIdentity)
		}
		if o.Passphrase == nil {
			return nil, fmt.Errorf("%w: the SSH private key is passphrase-protected and no passphrase can be asked", ErrIdentity)
		}
		enc, err := agessh.NewEncryptedSSHIdentity(missing.PublicKey, bytes.Clone(pemBytes), o.Passphrase)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrIdentity, err)
		}
		return []age.Identity{enc}, nil
	case err != nil:
		// x/crypto/ssh's errors name the problem, never the key.
		return nil, fmt.Errorf("%w: not an SSH private key age can use (ssh-ed25519 or ssh-rsa): %v", ErrIdentity, err)
	}
	return []age.Identity{id}, nil
}

// IsIdentityFile reports whether data looks like an age identity file
// (plain or passphrase-protected) rather than a password or keyfile: it
// begins, after blank and comment lines, with an identity, or is an age
// file. Used to sort a credential file of unknown kind (FromFile).
func IsIdentityFile(data []byte) bool {
	trimmed := bytes.TrimSpace(data)
	if bytes.HasPrefix(data, []byte("age-encryption.org/")) || bytes.HasPrefix(trimmed, []byte(armor.Header)) ||
		bytes.HasPrefix(trimmed, []byte("-----BEGIN OPENSSH PRIVATE KEY-----")) {
		return true
	}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return strings.HasPrefix(line, "AGE-SECRET-KEY-") || strings.HasPrefix(line, "AGE-PLUGIN-")
	}
	return false
}

func parseIdentityLines(data []byte, ui *plugin.ClientUI) ([]age.Identity, error) {
	var ids []age.Identity
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, MaxIdentityFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !utf8.ValidString(line) {
			return nil, fmt.Errorf("%w: line %d is not UTF-8", ErrIdentity, n)
		}
		var id []age.Identity
		var err error
		switch {
		case strings.HasPrefix(line, "AGE-PLUGIN-"):
			var p *plugin.Identity
			if p, err = plugin.NewIdentity(line, uiOrDefault(ui)); err == nil {
				id = []age.Identity{p}
			}
		case strings.HasPrefix(line, "AGE-SECRET-KEY-"):
			id, err = age.ParseIdentities(strings.NewReader(line))
		default:
			err = errors.New("not an age identity")
		}
		if err != nil {
			// age's errors never include the key; ours neither.
			return nil, fmt.Errorf("%w: line %d: %v", ErrIdentity, n, err)
		}
		ids = append(ids, id...)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIdentity, err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: no identities found", ErrIdentity)
	}
	return ids, nil
}

// encryptedIdentity is a passphrase-protected identity file: decrypted
// (scrypt recipient) the first time a slot is tried with it, then it acts
// as the identities it holds. As age's own command does, so that the
// passphrase is asked only if an age slot exists and nothing before it
// opened.
type encryptedIdentity struct {
	contents []byte
	opts     IdentityOptions
	inner    []age.Identity
	err      error
}

func (e *encryptedIdentity) Unwrap(stanzas []*age.Stanza) ([]byte, error) {
	if e.inner == nil && e.err == nil {
		e.inner, e.err = e.decrypt()
	}
	if e.err != nil {
		return nil, e.err
	}
	for _, id := range e.inner {
		key, err := id.Unwrap(stanzas)
		if errors.Is(err, age.ErrIncorrectIdentity) {
			continue
		}
		return key, err
	}
	return nil, age.ErrIncorrectIdentity
}

func (e *encryptedIdentity) decrypt() ([]age.Identity, error) {
	if e.opts.Passphrase == nil {
		return nil, fmt.Errorf("%w: the identity file is passphrase-protected and no passphrase can be asked", ErrIdentity)
	}
	pass, err := e.opts.Passphrase()
	if err != nil {
		return nil, err
	}
	defer clear(pass)
	sid, err := age.NewScryptIdentity(string(pass))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIdentity, err)
	}
	var src io.Reader = bytes.NewReader(e.contents)
	if bytes.HasPrefix(bytes.TrimSpace(e.contents), []byte(armor.Header)) {
		src = armor.NewReader(src)
	}
	r, err := age.Decrypt(src, sid)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot decrypt the identity file (wrong passphrase?): %v", ErrIdentity, err)
	}
	plain, err := io.ReadAll(io.LimitReader(r, MaxIdentityFile+1))
	defer clear(plain)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIdentity, err)
	}
	if len(plain) > MaxIdentityFile {
		return nil, fmt.Errorf("%w: identity file too large", ErrIdentity)
	}
	return parseIdentityLines(plain, e.opts.UI)
}

// ParseRecipient parses the recipient an age slot is sealed to, as age's
// -r does: X25519 ("age1..."), post-quantum hybrid ("age1pq1..."), a
// plugin's ("age1name1...", run through ui when the slot is made), or an
// SSH public key ("ssh-ed25519 AAAA... comment", "ssh-rsa ...", agessh).
func ParseRecipient(s string, ui *plugin.ClientUI) (age.Recipient, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "ssh-"):
		r, err := agessh.ParseRecipient(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", ErrRecipient, sshRecipientProblem(s))
		}
		return r, nil
	case strings.HasPrefix(s, "AGE-"):
		return nil, fmt.Errorf("%w: this is an identity (a private key), not a recipient; give its public key (age-keygen -y)", ErrRecipient)
	case strings.HasPrefix(s, "age1") && strings.Count(s, "1") > 1 && !strings.HasPrefix(s, "age1pq1"):
		r, err := plugin.NewRecipient(s, uiOrDefault(ui))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrRecipient, err)
		}
		return r, nil
	case strings.HasPrefix(s, "age1"):
		r, err := age.ParseRecipients(strings.NewReader(s))
		if err != nil || len(r) != 1 {
			return nil, fmt.Errorf("%w: not a valid age1... recipient", ErrRecipient)
		}
		return r[0], nil
	}
	if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(s)); err == nil {
		return nil, fmt.Errorf("%w: %s", ErrRecipient, sshRecipientProblem(s)) // ecdsa-..., sk-...
	}
	return nil, fmt.Errorf("%w: unknown kind of recipient (want age1..., a plugin's age1name1..., ssh-ed25519 or ssh-rsa)", ErrRecipient)
}

// sshRecipientProblem says, in a few words and without the key, why an
// "ssh-..." line is no recipient.
func sshRecipientProblem(s string) string {
	pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(s))
	if err != nil {
		return "not an SSH public key (paste the whole line of the .pub file)"
	}
	switch pk.Type() {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoRSA:
		return "an SSH key age cannot use (an RSA key needs at least 2048 bits)"
	}
	return fmt.Sprintf("SSH keys of type %s are not supported (age takes ssh-ed25519 and ssh-rsa)", pk.Type())
}

// MaxRecipientsFile bounds a recipients file (key add -R): age's own
// limit is 16 MiB, but a vault holds at most config.MaxSlots slots of
// config.MaxRecipient bytes each, so anything larger is not one.
const MaxRecipientsFile = config.MaxSlots * (config.MaxRecipient + 1)

// ParseRecipientsFile parses a recipients file as age's -R does: one
// recipient per line (ParseRecipient's kinds), blank lines and lines
// starting with # ignored. It returns the recipient strings, each checked
// (a plugin recipient is only parsed here: plugin.NewRecipient does not
// run the plugin, sealing the slot does). Errors name the line, never
// quote it.
func ParseRecipientsFile(data []byte) ([]string, error) {
	if len(data) > MaxRecipientsFile {
		return nil, fmt.Errorf("%w: recipients file larger than %d bytes", ErrRecipient, MaxRecipientsFile)
	}
	var out []string
	n := 0
	for line := range strings.Lines(string(data)) {
		n++
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !utf8.ValidString(line) || len(line) > config.MaxRecipient {
			return nil, fmt.Errorf("%w: recipients file line %d: not UTF-8 or longer than %d bytes", ErrRecipient, n, config.MaxRecipient)
		}
		if _, err := ParseRecipient(line, nil); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no recipients in the recipients file", ErrRecipient)
	}
	return out, nil
}

// sealAgeFile age-encrypts secret to recipient: an age slot's AgeFile.
// age draws its own file key and ephemeral keys from crypto/rand (not
// injectable), so an age slot is never reproducible byte for byte.
func sealAgeFile(recipient age.Recipient, secret []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, recipient)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRecipient, err)
	}
	if _, err := w.Write(secret); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if buf.Len() > config.MaxAgeFile {
		return nil, fmt.Errorf("%w: the age file for this recipient is %d bytes (limit %d)", ErrRecipient, buf.Len(), config.MaxAgeFile)
	}
	return buf.Bytes(), nil
}

// openAgeFile decrypts an age slot's AgeFile with identities: the slot
// secret. An age file whose payload fails age's authentication, or does
// not hold exactly SlotSecretSize bytes, does not open (Unlock treats it
// as a slot the identities do not open).
func openAgeFile(file []byte, identities []age.Identity) ([]byte, error) {
	r, err := age.Decrypt(bytes.NewReader(file), identities...)
	if err != nil {
		return nil, err
	}
	secret, err := io.ReadAll(io.LimitReader(r, config.SlotSecretSize+1))
	if err != nil {
		return nil, fmt.Errorf("age slot payload: %w", err)
	}
	if len(secret) != config.SlotSecretSize {
		clear(secret)
		return nil, fmt.Errorf("age slot payload is %d bytes, want %d", len(secret), config.SlotSecretSize)
	}
	return secret, nil
}
