package config

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

// Format 2's labels and associated-data prefixes (docs/format.md §3a).
// Each names one purpose, so no key or MAC input of one purpose can be
// taken for another's; the v2 in each keeps them apart from format 1's.
const (
	// slotWrapLabel: wrapKey = HKDF-SHA256(slot secret, no salt, this).
	// No salt is needed: every slot secret is already a uniform 32-byte
	// key (an Argon2id or HKDF output, or 32 random bytes).
	slotWrapLabel = "encryptfs v2 slot wrap"
	// slotADPrefix starts every slot's associated data; the NUL bytes
	// between its parts cannot occur inside them (JSON text has no raw
	// control characters), so the parts cannot be shifted into each other.
	slotADPrefix = "encryptfs.conf v2 slot\x00"
	// KeyfileLabel and RecoveryLabel are the HKDF info of the two
	// HKDF-derived slot secrets: different labels, so that a keyfile
	// whose bytes equal a recovery key still gives another secret.
	KeyfileLabel  = "encryptfs v2 keyfile"
	RecoveryLabel = "encryptfs v2 recovery key"
	// MACLabel: the config MAC key = HKDF-SHA256(master key, no salt,
	// this), a subkey of the master key of its own (docs/format.md §4).
	MACLabel = "encryptfs v2 config mac"
	// macPrefix starts the MAC's input; NUL-separated as above.
	macPrefix = "encryptfs.conf v2\x00"
)

// PasswordSecret is a password slot's secret: Argon2id(password, the
// slot's KDF), after the memory bound (LimitKDFMemory) is checked.
func (c *Config) PasswordSecret(h SlotHeader, password []byte) ([]byte, error) {
	if h.Type != SlotPassword || h.KDF == nil {
		return nil, fmt.Errorf("%w: slot %d is not a password slot", ErrUnknownSlot, h.ID)
	}
	if err := c.CheckKDFMemory(h.KDF.MemoryKiB); err != nil {
		return nil, err
	}
	c.passwordKDFRuns++
	secret, err := h.KDF.Key(password)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return secret, nil
}

// HKDFSecret is a keyfile or recovery slot's secret:
// HKDF-SHA256(ikm = credential, salt = the slot's Salt, info = its type's
// label). Why HKDF and not Argon2id: both credentials are high-entropy
// (a keyfile the caller requires to be at least 16 bytes, a 32-byte random
// recovery key), so there is nothing for a slow KDF to stretch; the
// per-slot salt makes the secret unique to the slot.
func HKDFSecret(h SlotHeader, credential []byte) ([]byte, error) {
	var label string
	switch h.Type {
	case SlotKeyfile:
		label = KeyfileLabel
	case SlotRecovery:
		label = RecoveryLabel
	default:
		return nil, fmt.Errorf("%w: slot %d is not a keyfile or recovery slot", ErrUnknownSlot, h.ID)
	}
	if len(h.Salt) != SlotSaltSize {
		return nil, fmt.Errorf("%w: slot %d has no salt", ErrCorrupt, h.ID)
	}
	return hkdf.Key(sha256.New, credential, h.Salt, label, SlotSecretSize)
}

// slotAEAD is AES-256-GCM under the slot's wrap key.
func slotAEAD(secret []byte) (cipher.AEAD, error) {
	if len(secret) != SlotSecretSize {
		return nil, fmt.Errorf("config: slot secret of %d bytes, want %d", len(secret), SlotSecretSize)
	}
	wk, err := hkdf.Key(sha256.New, secret, nil, slotWrapLabel, 32)
	if err != nil {
		return nil, fmt.Errorf("config: derive slot wrap key: %w", err)
	}
	defer clear(wk)
	block, err := aes.NewCipher(wk)
	if err != nil {
		return nil, fmt.Errorf("config: slot cipher: %w", err)
	}
	return cipher.NewGCM(block)
}

// slotAD is slotADPrefix ‖ Params bytes ‖ 0x00 ‖ header bytes: a slot
// opens only with the vault parameters and its own header exactly as they
// were when it was sealed. Why both: Params, because every slot (not just
// the config MAC, checked after) should refuse a weakened or altered
// parameter set; the header, because it holds the slot's KDF costs, salt,
// ID, label and age file, none of which may be swapped or edited.
func slotAD(rawParams, rawHeader []byte) []byte {
	ad := make([]byte, 0, len(slotADPrefix)+len(rawParams)+1+len(rawHeader))
	ad = append(ad, slotADPrefix...)
	ad = append(ad, rawParams...)
	ad = append(ad, 0)
	return append(ad, rawHeader...)
}

// sealSlot wraps masterKey under secret for the header rawHeader. Why a
// 12-byte random nonce is safe: every slot secret is fresh (a new salt or
// a new random secret each time a slot is made or its password changed),
// so each wrap key seals exactly once.
func sealSlot(rawParams, rawHeader, secret, masterKey []byte, rand io.Reader) ([]byte, error) {
	aead, err := slotAEAD(secret)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, wrapNonceSize, EncryptedKeySize)
	if _, err := io.ReadFull(rand, nonce); err != nil {
		return nil, fmt.Errorf("config: reading random nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, masterKey, slotAD(rawParams, rawHeader)), nil
}

// errSlotClosed: a slot's wrap did not open with the secret (a wrong
// credential or an edited slot); callers try the next slot.
var errSlotClosed = errors.New("config: key slot does not open with this secret")

// openSlot unwraps slot s with secret, without checking the MAC.
func (c *Config) openSlot(s Slot, secret []byte) ([]byte, error) {
	aead, err := slotAEAD(secret)
	if err != nil {
		return nil, err
	}
	if len(s.Wrapped) != EncryptedKeySize {
		return nil, fmt.Errorf("%w: slot %d: Wrapped of %d bytes", ErrCorrupt, s.Header.ID, len(s.Wrapped))
	}
	nonce, sealed := s.Wrapped[:wrapNonceSize], s.Wrapped[wrapNonceSize:]
	master, err := aead.Open(nil, nonce, sealed, slotAD(c.slotParams(), s.rawHeader))
	if err != nil {
		return nil, errSlotClosed
	}
	return master, nil
}

// OpenSlot unwraps the master key from the slot with ID id using its slot
// secret, then checks the config MAC under that key (VerifyMAC). It
// returns ErrNoSlotMatch if the secret does not open the slot, ErrTampered
// if it does but the MAC fails. The caller clears the key.
func (c *Config) OpenSlot(id int, secret []byte) ([]byte, error) {
	if !c.IsV2() {
		return nil, ErrNotV2
	}
	s, _, err := c.SlotByID(id)
	if err != nil {
		return nil, err
	}
	master, err := c.openSlot(s, secret)
	if errors.Is(err, errSlotClosed) {
		return nil, fmt.Errorf("%w (slot %d)", ErrNoSlotMatch, id)
	}
	if err != nil {
		return nil, err
	}
	if err := c.VerifyMAC(master); err != nil {
		clear(master)
		return nil, err
	}
	return master, nil
}

// UnlockPassword tries password on every password slot, in stored order,
// and returns the master key and the ID of the slot that opened. Argon2id
// runs once per password slot until one opens. ErrWrongPassword if none
// does (also when the config has no password slot: the error says so).
func (c *Config) UnlockPassword(password []byte) ([]byte, int, error) {
	if !c.IsV2() {
		return nil, 0, ErrNotV2
	}
	found := false
	for _, s := range c.Slots {
		if s.Header.Type != SlotPassword {
			continue
		}
		found = true
		secret, err := c.PasswordSecret(s.Header, password)
		if err != nil {
			return nil, 0, err
		}
		master, err := c.OpenSlot(s.Header.ID, secret)
		clear(secret)
		if errors.Is(err, ErrNoSlotMatch) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		return master, s.Header.ID, nil
	}
	if !found {
		return nil, 0, fmt.Errorf("%w: the vault has no password slot", ErrWrongPassword)
	}
	return nil, 0, ErrWrongPassword
}

// macKey is the config MAC key, a subkey of the master key.
func macKey(masterKey []byte) ([]byte, error) {
	if len(masterKey) != keys.MasterKeySize {
		return nil, fmt.Errorf("config: %w", keys.ErrMasterKey)
	}
	return hkdf.Key(sha256.New, masterKey, nil, MACLabel, 32)
}

// computeMAC is HMAC-SHA256(macKey, macPrefix ‖ Params bytes ‖ 0x00 ‖
// Slots bytes), followed by 0x00 ‖ SlotParams bytes in a config that has
// them (features.go; JSON has no NUL, so the parts stay apart). Why a MAC over the whole set on top of each slot's AEAD:
// a slot's AEAD proves that slot, not that no slot was added, removed,
// reordered or restored from an old copy beside it; the MAC, keyed by the
// master key that only slot holders have, proves the set.
//
// With the KeyEpochs flag the input goes on with 0x00 ‖ the epoch state
// (epochState.macTail: epoch u32 ‖ the sealed older keys): the epoch
// number and the older keys are authenticated with the slots, under the
// current epoch key. The byte after the first NUL past Slots tells the
// two tails apart: '{' starts SlotParams, 0x00 the epoch (at most 1024).
func computeMAC(masterKey, rawParams, rawSlots, rawSlotParams, epochTail []byte) ([]byte, error) {
	k, err := macKey(masterKey)
	if err != nil {
		return nil, err
	}
	defer clear(k)
	m := hmac.New(sha256.New, k)
	m.Write([]byte(macPrefix))
	m.Write(rawParams)
	m.Write([]byte{0})
	m.Write(rawSlots)
	if rawSlotParams != nil {
		m.Write([]byte{0})
		m.Write(rawSlotParams)
	}
	m.Write(epochTail)
	return m.Sum(nil), nil
}

// VerifyMAC checks the config MAC under masterKey, in constant time:
// ErrTampered if it fails. On the master-key path (no slot opened) it is
// what authenticates Params and the slot set, which format 1 could not
// (docs/format.md §3); there a failure also means a wrong master key.
func (c *Config) VerifyMAC(masterKey []byte) error {
	if !c.IsV2() {
		return ErrNotV2
	}
	want, err := computeMAC(masterKey, c.rawParams, c.rawSlots, c.rawSlotParams, c.epochs.macTail())
	if err != nil {
		return err
	}
	if !hmac.Equal(want, c.MAC) {
		return ErrTampered
	}
	return nil
}
