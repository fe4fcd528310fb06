// Command age-plugin-enctest is a test-only age plugin for internal/keyslot's
// tests: it exercises age's plugin protocol end to end without hardware.
// NOT SECURE: the recipient and identity carry the same 32-byte key, so
// anyone with the recipient can decrypt. Its recipient is
// age1enctest1<key> and its identity AGE-PLUGIN-ENCTEST-1<key>; a stanza is
// "enctest <hex(SHA-256(key))[:16]>" whose body is ChaCha20-Poly1305(key,
// zero nonce, fileKey) (each file key is sealed once).
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log"
	"os"

	"filippo.io/age"
	"filippo.io/age/plugin"
	"golang.org/x/crypto/chacha20poly1305"
)

type key []byte

func (k key) tag() string { s := sha256.Sum256(k); return hex.EncodeToString(s[:8]) }

func (k key) Wrap(fileKey []byte) ([]*age.Stanza, error) {
	aead, err := chacha20poly1305.New(k)
	if err != nil {
		return nil, err
	}
	body := aead.Seal(nil, make([]byte, aead.NonceSize()), fileKey, nil)
	return []*age.Stanza{{Type: "enctest", Args: []string{k.tag()}, Body: body}}, nil
}

func (k key) Unwrap(stanzas []*age.Stanza) ([]byte, error) {
	aead, err := chacha20poly1305.New(k)
	if err != nil {
		return nil, err
	}
	for _, s := range stanzas {
		if s.Type != "enctest" || len(s.Args) != 1 || s.Args[0] != k.tag() {
			continue
		}
		fk, err := aead.Open(nil, make([]byte, aead.NonceSize()), s.Body, nil)
		if err != nil {
			return nil, errors.New("enctest: stanza does not open")
		}
		return fk, nil
	}
	return nil, age.ErrIncorrectIdentity
}

func parse(data []byte) (key, error) {
	if len(data) != chacha20poly1305.KeySize {
		return nil, errors.New("enctest: key must be 32 bytes")
	}
	return key(data), nil
}

func main() {
	p, err := plugin.New("enctest")
	if err != nil {
		log.Fatal(err)
	}
	p.HandleRecipient(func(data []byte) (age.Recipient, error) { return parse(data) })
	p.HandleIdentityAsRecipient(func(data []byte) (age.Recipient, error) { return parse(data) })
	p.HandleIdentity(func(data []byte) (age.Identity, error) { return parse(data) })
	os.Exit(p.Main())
}
