// Package keyslot opens and manages the key slots of a format-2 vault
// config (docs/format.md §3a): it turns the credentials a user offers
// (password, keyfile, recovery key, age identities including plugins and
// passphrase-protected identity files, the master key) into slot secrets
// and tries them on the config's slots, and it makes new slots of every
// type. The slot format and its cryptography (wrap, MAC, password, keyfile
// and recovery derivations) live in internal/config; age, which runs
// plugins and reads identity files, lives here so that internal/crypto and
// internal/config stay free of it. It reads and writes no vault file: the
// session layer loads and saves the config.
package keyslot

import (
	"errors"
	"fmt"

	"filippo.io/age"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

// Credentials are everything offered to open a vault. Each is tried only
// on slots of its own type, in this order: master key, recovery keys,
// keyfiles, age identities, password. Why this order: the cheap and
// non-interactive ones first, so that a keyfile or a systemd credential
// opens the vault without running Argon2id or prompting; the password last,
// since asking for it may prompt the user.
type Credentials struct {
	// Password is called at most once, and only if the config has a
	// password slot and nothing else offered opened a slot (or, for a
	// format-1 config, if no master key was given). The bytes are wiped
	// after use.
	Password func() ([]byte, error)
	// Keyfiles are keyfile contents (ReadKeyfile).
	Keyfiles [][]byte
	// RecoveryKeys are 32-byte recovery keys (ParsePaperKey).
	RecoveryKeys [][]byte
	// Identities are age identities (ParseIdentities): X25519, hybrid,
	// plugin, or a passphrase-protected identity file.
	Identities []age.Identity
	// MasterKey, if set, opens the vault directly; for a format-2 config
	// the config MAC is checked under it, which authenticates Params and
	// the slot set (format 1 could not).
	MasterKey []byte
}

// Result is an unlocked config's master key and how it was obtained.
type Result struct {
	// MasterKey is the vault's master key; the caller clears it.
	MasterKey []byte
	// SlotID and SlotType name the slot that opened: 0 and "" for the
	// master key or a format-1 config's password.
	SlotID   int
	SlotType string
}

// Unlock opens c with the credentials in cr. For a format-2 config every
// slot that opens also has the config MAC checked (config.ErrTampered if it
// fails, at once: nothing else is tried on a config known to be edited).
// If nothing opens: config.ErrWrongPassword when only a password was
// offered, else config.ErrNoSlotMatch (with the last age or plugin error,
// if any, for the message).
func Unlock(c *config.Config, cr Credentials) (*Result, error) {
	if cr.MasterKey != nil {
		if len(cr.MasterKey) != keys.MasterKeySize {
			return nil, keys.ErrMasterKey
		}
		if c.IsV2() {
			if err := c.VerifyMAC(cr.MasterKey); err != nil {
				return nil, fmt.Errorf("%w (or a wrong master key)", err)
			}
		}
		return &Result{MasterKey: append([]byte(nil), cr.MasterKey...)}, nil
	}
	if !c.IsV2() {
		return unlockV1(c, cr)
	}
	u := unlocker{c: c}
	for _, try := range []func(Credentials) (*Result, error){u.recovery, u.keyfiles, u.age, u.password} {
		r, err := try(cr)
		if r != nil || err != nil {
			return r, err
		}
	}
	onlyPassword := cr.Password != nil && len(cr.Keyfiles) == 0 && len(cr.RecoveryKeys) == 0 && len(cr.Identities) == 0
	if onlyPassword && u.askedPassword {
		return nil, config.ErrWrongPassword
	}
	if u.lastErr != nil {
		return nil, fmt.Errorf("%w (%w)", config.ErrNoSlotMatch, u.lastErr)
	}
	return nil, config.ErrNoSlotMatch
}

// unlockV1 opens a format-1 config, which has only its password.
func unlockV1(c *config.Config, cr Credentials) (*Result, error) {
	if cr.Password == nil {
		return nil, fmt.Errorf("%w: a format-1 vault opens only with its password or master key", config.ErrNoSlotMatch)
	}
	pw, err := cr.Password()
	if err != nil {
		return nil, err
	}
	defer clear(pw)
	master, err := c.Unlock(pw)
	if err != nil {
		return nil, err
	}
	return &Result{MasterKey: master}, nil
}

// unlocker tries credentials on one format-2 config.
type unlocker struct {
	c             *config.Config
	askedPassword bool
	lastErr       error // the last age or plugin failure, for the message
}

// open tries secret on slot s; (nil, nil) means "not this slot".
func (u *unlocker) open(s config.Slot, secret []byte) (*Result, error) {
	master, err := u.c.OpenSlot(s.Header.ID, secret)
	if errors.Is(err, config.ErrNoSlotMatch) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &Result{MasterKey: master, SlotID: s.Header.ID, SlotType: s.Header.Type}, nil
}

// hkdfSlots tries each credential on each slot of type typ.
func (u *unlocker) hkdfSlots(typ string, creds [][]byte) (*Result, error) {
	for _, s := range u.c.Slots {
		if s.Header.Type != typ {
			continue
		}
		for _, cred := range creds {
			secret, err := config.HKDFSecret(s.Header, cred)
			if err != nil {
				return nil, err
			}
			r, err := u.open(s, secret)
			clear(secret)
			if r != nil || err != nil {
				return r, err
			}
		}
	}
	return nil, nil
}

func (u *unlocker) recovery(cr Credentials) (*Result, error) {
	for _, k := range cr.RecoveryKeys {
		if len(k) != RecoveryKeySize {
			return nil, fmt.Errorf("%w: a recovery key is %d bytes", ErrPaperKey, RecoveryKeySize)
		}
	}
	return u.hkdfSlots(config.SlotRecovery, cr.RecoveryKeys)
}

func (u *unlocker) keyfiles(cr Credentials) (*Result, error) {
	for _, k := range cr.Keyfiles {
		if err := checkKeyfile(len(k)); err != nil {
			return nil, err
		}
	}
	return u.hkdfSlots(config.SlotKeyfile, cr.Keyfiles)
}

func (u *unlocker) age(cr Credentials) (*Result, error) {
	if len(cr.Identities) == 0 {
		return nil, nil
	}
	for _, s := range u.c.Slots {
		if s.Header.Type != config.SlotAge {
			continue
		}
		secret, err := openAgeFile(s.Header.AgeFile, cr.Identities)
		if err != nil {
			// No identity matched, a plugin failed, or the age file was
			// edited: like a slot whose wrap fails, it does not open
			// (the storage can make any age file: recipients are public).
			u.lastErr = err
			continue
		}
		r, err := u.open(s, secret)
		clear(secret)
		if r != nil || err != nil {
			return r, err
		}
	}
	return nil, nil
}

func (u *unlocker) password(cr Credentials) (*Result, error) {
	if cr.Password == nil || !hasType(u.c, config.SlotPassword) {
		return nil, nil
	}
	u.askedPassword = true
	pw, err := cr.Password()
	if err != nil {
		return nil, err
	}
	defer clear(pw)
	master, id, err := u.c.UnlockPassword(pw)
	if errors.Is(err, config.ErrWrongPassword) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &Result{MasterKey: master, SlotID: id, SlotType: config.SlotPassword}, nil
}

func hasType(c *config.Config, typ string) bool {
	for _, s := range c.Slots {
		if s.Header.Type == typ {
			return true
		}
	}
	return false
}
