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
	"filippo.io/age/armor"
	"filippo.io/age/plugin"
	"github.com/encryptfs/encryptfs/internal/config"
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
// lines, protected by a passphrase (decrypted lazily, o.Passphrase). An
// error never quotes the file (it holds private keys).
func ParseIdentities(data []byte, o IdentityOptions) ([]age.Identity, error) {
	if len(data) > MaxIdentityFile {
		return nil, fmt.Errorf("%w: identity file larger than %d bytes", ErrIdentity, MaxIdentityFile)
	}
	trimmed := bytes.TrimSpace(data)
	if bytes.HasPrefix(data, []byte("age-encryption.org/")) || bytes.HasPrefix(trimmed, []byte(armor.Header)) {
		return []age.Identity{&encryptedIdentity{contents: bytes.Clone(data), opts: o}}, nil
	}
	return parseIdentityLines(data, o.UI)
}

// IsIdentityFile reports whether data looks like an age identity file
// (plain or passphrase-protected) rather than a password or keyfile: it
// begins, after blank and comment lines, with an identity, or is an age
// file. Used to sort a credential file of unknown kind (FromFile).
func IsIdentityFile(data []byte) bool {
	trimmed := bytes.TrimSpace(data)
	if bytes.HasPrefix(data, []byte("age-encryption.org/")) || bytes.HasPrefix(trimmed, []byte(armor.Header)) {
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

// ParseRecipient parses the recipient an age slot is sealed to: X25519
// ("age1..."), post-quantum hybrid ("age1pq1...") or a plugin's
// ("age1name1...", run through ui when the slot is made).
func ParseRecipient(s string, ui *plugin.ClientUI) (age.Recipient, error) {
	s = strings.TrimSpace(s)
	if r, err := age.ParseRecipients(strings.NewReader(s)); err == nil && len(r) == 1 {
		return r[0], nil
	}
	r, err := plugin.NewRecipient(s, uiOrDefault(ui))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRecipient, err)
	}
	return r, nil
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
