package keyslot

import (
	"errors"
	"fmt"
	"io"

	"filippo.io/age/plugin"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

// Revocation (docs/format.md §3b): a revoke makes a fresh epoch key
// K_{e+1} and every slot that stays must wrap it, so each needs its slot
// secret anew. Which slots can be re-wrapped without their holder:
//
//   - age: yes. An age slot's secret is random and sealed to the slot's
//     recipient, a public key (or a plugin's recipient string), stored in
//     the slot header and authenticated by its wrap and the config MAC. A
//     new random secret is sealed to the same recipient: the identity
//     (a hardware token, a file elsewhere) is not needed.
//   - password, keyfile, recovery key: no. Their secret is derived from
//     the credential itself; nothing in the config (which the revoked
//     holder may have kept, with K_e) can make a new one, or the revoked
//     holder could too. The credential must be given again (RevokeSpec:
//     passwd's new password for its slot, or the password, keyfile or
//     recovery key itself), or the slot removed.
//
// Rejected: each slot wrapping a per-slot key that wraps K_e, so that a
// revoke re-wraps K_{e+1} without any credential. It works only for slots
// made after the change (a slot of today wraps K_0 itself, and turning it
// into a per-slot key needs its credential once anyway), and it doubles
// the slot format for one saved prompt per revoke.

// RevokeSpec says how the slots of a vault are carried into the next
// epoch.
type RevokeSpec struct {
	// Remove, if not 0, is the slot to drop (key remove --revoke).
	Remove int
	// PasswordSlot, if not 0, gets NewPassword under KDF (passwd
	// --revoke; a fresh salt).
	PasswordSlot int
	NewPassword  []byte
	KDF          kdf.Params
	// Passwords, Keyfiles and RecoveryKeys are offered to re-wrap the
	// password (other than PasswordSlot), keyfile and recovery slots they
	// open (the credentials given to unlock, again). A password slot
	// carried this way keeps its KDF costs with a fresh salt.
	Passwords    [][]byte
	Keyfiles     [][]byte
	RecoveryKeys [][]byte
	// UI runs the plugin of a plugin recipient (an age slot's re-seal).
	UI *plugin.ClientUI
}

// ErrNeedsCredential: a slot to keep cannot be re-wrapped without its
// credential (NeedsCredentialError lists them).
var ErrNeedsCredential = errors.New("keyslot: a key slot to keep needs its credential to move to the new epoch")

// NeedsCredentialError lists the slots a revoke cannot carry over.
type NeedsCredentialError struct{ Slots []Info }

func (e *NeedsCredentialError) Error() string {
	s := "keyslot: these key slots cannot move to the new epoch without their credential:"
	for _, si := range e.Slots {
		s += fmt.Sprintf(" %d (%s %q)", si.ID, si.Type, si.Label)
	}
	return s
}

func (e *NeedsCredentialError) Unwrap() error { return ErrNeedsCredential }

// Revoke returns the next epoch's config of c (config.Revoke): every slot
// but spec.Remove is kept with its ID, label and place, wrapping the new
// key next (a fresh random key the caller drew). current is c's key.
// NeedsCredentialError if a kept slot cannot be re-wrapped (see above);
// then nothing is made. The caller saves the result atomically.
func Revoke(c *config.Config, current, next []byte, spec RevokeSpec, rand io.Reader) (*config.Config, error) {
	if !c.IsV2() {
		return nil, config.ErrNotV2
	}
	if len(next) != keys.MasterKeySize {
		return nil, keys.ErrMasterKey
	}
	if spec.Remove != 0 {
		if _, _, err := c.SlotByID(spec.Remove); err != nil {
			return nil, err
		}
		if len(c.Slots) == 1 {
			return nil, config.ErrLastSlot
		}
	}
	var kept []config.KeptSlot
	defer func() {
		for _, k := range kept {
			clear(k.Secret)
		}
	}()
	var missing []Info
	for _, s := range c.Slots {
		h := s.Header
		if h.ID == spec.Remove {
			continue
		}
		ns, ok, err := carry(c, h, spec, rand)
		if err != nil {
			return nil, err
		}
		if !ok {
			missing = append(missing, List(&config.Config{Slots: []config.Slot{s}})...)
			continue
		}
		nh, secret, err := prepare(c, ns, rand)
		if err != nil {
			return nil, fmt.Errorf("keyslot: revoke: slot %d: %w", h.ID, err)
		}
		nh.ID = h.ID
		kept = append(kept, config.KeptSlot{Header: nh, Secret: secret})
	}
	if missing != nil {
		return nil, &NeedsCredentialError{Slots: missing}
	}
	return c.Revoke(current, next, kept, rand)
}

// carry is the NewSlot that re-makes slot h in the next epoch, or false if
// its credential is not in spec.
func carry(c *config.Config, h config.SlotHeader, spec RevokeSpec, rand io.Reader) (NewSlot, bool, error) {
	ns := NewSlot{Type: h.Type, Label: h.Label}
	switch h.Type {
	case config.SlotAge:
		ns.Recipient, ns.UI = h.Recipient, spec.UI
		return ns, true, nil
	case config.SlotPassword:
		if h.ID == spec.PasswordSlot && len(spec.NewPassword) > 0 {
			ns.Password, ns.KDF = spec.NewPassword, spec.KDF
			return ns, true, nil
		}
		for _, pw := range spec.Passwords {
			if ok, err := opens(c, h, pw); err != nil || !ok {
				if err != nil {
					return ns, false, err
				}
				continue
			}
			k, err := kdf.New(rand, h.KDF.Time, h.KDF.MemoryKiB, h.KDF.Threads)
			if err != nil {
				return ns, false, err
			}
			ns.Password, ns.KDF = pw, k
			return ns, true, nil
		}
	case config.SlotKeyfile, config.SlotRecovery:
		creds := spec.Keyfiles
		if h.Type == config.SlotRecovery {
			creds = spec.RecoveryKeys
		}
		for _, cred := range creds {
			if ok, _ := opens(c, h, cred); ok {
				ns.Keyfile, ns.RecoveryKey = cred, cred
				return ns, true, nil
			}
		}
	}
	return ns, false, nil
}

// opens reports whether credential opens slot h (a password slot runs
// Argon2id: an error there, such as the memory bound, is returned).
func opens(c *config.Config, h config.SlotHeader, cred []byte) (bool, error) {
	var secret []byte
	var err error
	if h.Type == config.SlotPassword {
		if secret, err = c.PasswordSecret(h, cred); err != nil {
			return false, err
		}
	} else if secret, err = config.HKDFSecret(h, cred); err != nil {
		return false, nil
	}
	defer clear(secret)
	master, err := c.OpenSlot(h.ID, secret)
	if err != nil {
		return false, nil
	}
	clear(master)
	return true, nil
}
