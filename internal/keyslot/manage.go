package keyslot

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	"filippo.io/age/plugin"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/display"
)

// NewSlot describes a slot to make. Type says which fields count:
//
//	config.SlotPassword  Password, KDF (fresh salt: kdf.New / session.NewKDFParams)
//	config.SlotKeyfile   Keyfile (ReadKeyfile)
//	config.SlotRecovery  RecoveryKey (NewRecoveryKey)
//	config.SlotAge       Recipient (age1..., age1pq1..., or a plugin's), UI
type NewSlot struct {
	Type  string
	Label string // at most config.MaxLabel bytes, display-safe

	Password    []byte
	KDF         kdf.Params
	Keyfile     []byte
	RecoveryKey []byte
	Recipient   string
	UI          *plugin.ClientUI // for a plugin recipient
}

// prepare makes ns's header (ID 0: assigned on add) and slot secret. rand
// gives salts and an age slot's secret.
func prepare(c *config.Config, ns NewSlot, rand io.Reader) (config.SlotHeader, []byte, error) {
	h := config.SlotHeader{Type: ns.Type, Label: ns.Label}
	if len(ns.Label) > config.MaxLabel || !display.Safe(ns.Label) {
		return h, nil, ErrLabel
	}
	switch ns.Type {
	case config.SlotPassword:
		if len(ns.Password) == 0 {
			return h, nil, errors.New("keyslot: a password slot needs a non-empty password")
		}
		k := ns.KDF
		k.Salt = append([]byte(nil), k.Salt...)
		h.KDF = &k
		secret, err := c.PasswordSecret(h, ns.Password)
		return h, secret, err
	case config.SlotKeyfile, config.SlotRecovery:
		cred := ns.Keyfile
		if ns.Type == config.SlotRecovery {
			cred = ns.RecoveryKey
			if len(cred) != RecoveryKeySize {
				return h, nil, ErrPaperKey
			}
		} else if err := checkKeyfile(len(cred)); err != nil {
			return h, nil, err
		}
		h.Salt = make([]byte, config.SlotSaltSize)
		if _, err := io.ReadFull(rand, h.Salt); err != nil {
			return h, nil, fmt.Errorf("keyslot: reading random salt: %w", err)
		}
		secret, err := config.HKDFSecret(h, cred)
		return h, secret, err
	case config.SlotAge:
		r, err := ParseRecipient(ns.Recipient, ns.UI)
		if err != nil {
			return h, nil, err
		}
		// Why a random secret rather than age's own file key: age keeps
		// its file key internal; a secret of our own, sealed as age's
		// payload, gives every slot type the same shape (a 32-byte
		// secret unwrapping the master key).
		secret := make([]byte, config.SlotSecretSize)
		if _, err := io.ReadFull(rand, secret); err != nil {
			return h, nil, fmt.Errorf("keyslot: reading random slot secret: %w", err)
		}
		if h.AgeFile, err = sealAgeFile(r, secret); err != nil {
			clear(secret)
			return h, nil, err
		}
		h.Recipient = ns.Recipient
		return h, secret, nil
	}
	return h, nil, fmt.Errorf("keyslot: unknown slot type %q", ns.Type)
}

// Create makes a format-2 config with params p (config.NewParamsV2), a
// fresh master key from rand and the slots in first (at least one; IDs 1,
// 2, ... in order). The caller saves it and clears the master key.
func Create(p config.Params, first []NewSlot, rand io.Reader) (*config.Config, []byte, error) {
	if len(first) == 0 {
		return nil, nil, errors.New("keyslot: a vault needs at least one key slot")
	}
	// The KDF memory bound applies to a password slot made here too;
	// a config with no limit set has none.
	tmp := &config.Config{}
	h, secret, err := prepare(tmp, first[0], rand)
	if err != nil {
		return nil, nil, err
	}
	c, master, err := config.CreateV2(p, h, secret, rand)
	clear(secret)
	if err != nil {
		return nil, nil, err
	}
	for _, ns := range first[1:] {
		if _, err := Add(c, master, ns, rand); err != nil {
			clear(master)
			return nil, nil, err
		}
	}
	return c, master, nil
}

// Add makes slot ns and adds it to c (config.AddSlot), returning its ID.
// c must be format 2 and masterKey its key (the MAC is checked first).
func Add(c *config.Config, masterKey []byte, ns NewSlot, rand io.Reader) (int, error) {
	if !c.IsV2() {
		return 0, config.ErrNotV2
	}
	if err := c.VerifyMAC(masterKey); err != nil {
		return 0, err
	}
	h, secret, err := prepare(c, ns, rand)
	if err != nil {
		return 0, err
	}
	defer clear(secret)
	return c.AddSlot(masterKey, h, secret, rand)
}

// Remove removes slot id from c (config.RemoveSlot; the last slot is
// refused with config.ErrLastSlot).
func Remove(c *config.Config, masterKey []byte, id int) error {
	if !c.IsV2() {
		return config.ErrNotV2
	}
	return c.RemoveSlot(masterKey, id)
}

// Info is what key list shows of a slot. Label and Recipient come from the
// vault's storage but are display-safe (config.SlotHeader.Validate
// refuses anything else).
type Info struct {
	ID        int
	Type      string
	Label     string
	Recipient string      // age slots
	KDF       *kdf.Params // password slots (a copy)
}

// List returns c's slots sorted by ID (nil for a format-1 config). The
// list is what the file says; only Unlock proves it was not edited.
func List(c *config.Config) []Info {
	var out []Info
	for _, s := range c.Slots {
		i := Info{ID: s.Header.ID, Type: s.Header.Type, Label: s.Header.Label, Recipient: s.Header.Recipient}
		if s.Header.KDF != nil {
			k := *s.Header.KDF
			k.Salt = append([]byte(nil), k.Salt...)
			i.KDF = &k
		}
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b Info) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// ChangePassword re-wraps the password slot that oldPassword opens under
// newPassword with KDF params k (fresh salt), keeping its ID, label and
// place, and returns its ID. The old password selects the slot, so passwd
// works as with format 1. config.ErrWrongPassword if no password slot
// opens with oldPassword.
func ChangePassword(c *config.Config, oldPassword, newPassword []byte, k kdf.Params, rand io.Reader) (int, error) {
	master, id, err := c.UnlockPassword(oldPassword)
	if err != nil {
		return 0, err
	}
	defer clear(master)
	return id, SetPassword(c, master, id, newPassword, k, rand)
}

// SetPassword re-wraps password slot id under newPassword with KDF params
// k, given the master key (for example after opening with a recovery
// key). config.ErrUnknownSlot if id is not a password slot.
func SetPassword(c *config.Config, masterKey []byte, id int, newPassword []byte, k kdf.Params, rand io.Reader) error {
	s, _, err := c.SlotByID(id)
	if err != nil {
		return err
	}
	if s.Header.Type != config.SlotPassword {
		return fmt.Errorf("%w: slot %d is a %s slot, not a password slot", config.ErrUnknownSlot, id, s.Header.Type)
	}
	h, secret, err := prepare(c, NewSlot{Type: config.SlotPassword, Label: s.Header.Label, Password: newPassword, KDF: k}, rand)
	if err != nil {
		return err
	}
	defer clear(secret)
	h.ID = id
	return c.ReplaceSlot(masterKey, h, secret, rand)
}

// Upgrade returns the format-2 config of the format-1 config c: the same
// master key (content untouched), unlocked with password, which becomes
// password slot 1 (label "password") under KDF params k (a fresh salt;
// the caller keeps or raises the v1 costs as passwd does). c is not
// changed; the caller saves the result (atomically, config.Save).
func Upgrade(c *config.Config, password []byte, k kdf.Params, rand io.Reader) (*config.Config, error) {
	if c.IsV2() {
		return nil, config.ErrNotV1
	}
	if c.Params.Reverse {
		return nil, config.ErrReverseV2
	}
	master, err := c.Unlock(password)
	if err != nil {
		return nil, err
	}
	defer clear(master)
	h, secret, err := prepare(c, NewSlot{Type: config.SlotPassword, Label: "password", Password: password, KDF: k}, rand)
	if err != nil {
		return nil, err
	}
	defer clear(secret)
	return c.UpgradeToV2(master, h, secret, rand)
}
