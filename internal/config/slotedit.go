package config

import (
	"fmt"
	"io"
	"slices"

	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

// NewParamsV2 returns format-2 params with every format-2 feature flag set.
func NewParamsV2(cipher string, chunkSize int) Params {
	return Params{
		FormatVersion: FormatVersion2,
		FeatureFlags:  RequiredFlagsV2(),
		Cipher:        cipher,
		ChunkSize:     chunkSize,
	}
}

// CreateV2 makes a fresh random master key (from rand) and a format-2
// config whose one slot, first, opens with secret (its slot secret, see
// PasswordSecret, HKDFSecret; an age slot's is random). first.ID 0 means
// slot 1. The caller adds further slots (AddSlot), saves the config and
// clears the master key.
func CreateV2(p Params, first SlotHeader, secret []byte, rand io.Reader) (*Config, []byte, error) {
	if p.FormatVersion != FormatVersion2 {
		return nil, nil, fmt.Errorf("config: CreateV2 with format %d params", p.FormatVersion)
	}
	masterKey := make([]byte, keys.MasterKeySize)
	if _, err := io.ReadFull(rand, masterKey); err != nil {
		return nil, nil, fmt.Errorf("config: reading random master key: %w", err)
	}
	c, err := newV2(DefaultCreator, p, masterKey, first, secret, rand)
	if err != nil {
		clear(masterKey)
		return nil, nil, err
	}
	return c, masterKey, nil
}

// newV2 builds a format-2 config around masterKey with one slot.
func newV2(creator string, p Params, masterKey []byte, first SlotHeader, secret []byte, rand io.Reader) (*Config, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	raw, err := encodeParamsV2(p)
	if err != nil {
		return nil, err
	}
	c := &Config{Creator: creator, Params: p, rawParams: raw}
	if first.ID == 0 {
		first.ID = MinSlotID
	}
	s, err := c.newSlot(first, secret, masterKey, rand)
	if err != nil {
		return nil, err
	}
	if err := c.setSlots(masterKey, []Slot{s}); err != nil {
		return nil, err
	}
	return c, nil
}

// UpgradeToV2 returns the format-2 config of the format-1 config c, with
// the same master key, cipher, chunk size and Creator, and one slot
// (first, opened by secret). The content of the vault is untouched: format
// 2 stores it exactly as format 1. A reverse config is refused
// (ErrReverseV2). c is not changed; the caller saves the result.
func (c *Config) UpgradeToV2(masterKey []byte, first SlotHeader, secret []byte, rand io.Reader) (*Config, error) {
	if c.IsV2() {
		return nil, ErrNotV1
	}
	if c.Params.Reverse {
		return nil, ErrReverseV2
	}
	p := NewParamsV2(c.Params.Cipher, c.Params.ChunkSize)
	next, err := newV2(c.Creator, p, masterKey, first, secret, rand)
	if err != nil {
		return nil, err
	}
	next.maxKDFMemoryKiB = c.maxKDFMemoryKiB
	return next, nil
}

// NextSlotID is the ID a new slot gets: one more than the highest in
// use, so that the ID of a removed slot is not given to another while a
// slot above it remains (a user's note "slot 3 is the yubikey" stays
// true or names nothing). Only when the highest in use is MaxSlotID is
// the lowest free ID taken. 0 if the config is full. The config records
// no counter (docs/format.md §3a, "Slot IDs"): removing the slot with the
// highest ID makes that ID the next one.
func (c *Config) NextSlotID() int {
	if len(c.Slots) >= MaxSlots {
		return 0
	}
	highest := 0
	for _, s := range c.Slots {
		highest = max(highest, s.Header.ID)
	}
	if highest < MaxSlotID {
		return highest + 1
	}
	for id := MinSlotID; id <= MaxSlotID; id++ {
		if _, _, err := c.SlotByID(id); err != nil {
			return id
		}
	}
	return 0
}

// AddSlot adds a slot with header h (h.ID 0: NextSlotID) that wraps
// masterKey under secret, and re-computes the MAC. masterKey must be the
// key the config's MAC verifies under: a wrong one would seal a slot that
// opens to the wrong key and re-MAC the set so that no slot opens cleanly
// (it is refused with ErrTampered instead). On error c is unchanged.
// It returns the new slot's ID.
func (c *Config) AddSlot(masterKey []byte, h SlotHeader, secret []byte, rand io.Reader) (int, error) {
	if err := c.VerifyMAC(masterKey); err != nil {
		return 0, err
	}
	if len(c.Slots) >= MaxSlots {
		return 0, fmt.Errorf("%w: at most %d", ErrSlotLimit, MaxSlots)
	}
	if h.Type == SlotPassword && passwordSlots(c.Slots) >= MaxPasswordSlots {
		return 0, fmt.Errorf("%w: at most %d password slots (add a keyfile, age or recovery slot instead)", ErrSlotLimit, MaxPasswordSlots)
	}
	if h.ID == 0 {
		h.ID = c.NextSlotID()
	} else if _, _, err := c.SlotByID(h.ID); err == nil {
		return 0, fmt.Errorf("%w: %d", ErrDuplicateSlot, h.ID)
	}
	s, err := c.newSlot(h, secret, masterKey, rand)
	if err != nil {
		return 0, err
	}
	if err := c.setSlots(masterKey, append(slices.Clone(c.Slots), s)); err != nil {
		return 0, err
	}
	return h.ID, nil
}

// RemoveSlot removes the slot with ID id and re-computes the MAC (so a
// copy of the removed slot put back by the storage is detected). The last
// slot is refused (ErrLastSlot). On error c is unchanged.
func (c *Config) RemoveSlot(masterKey []byte, id int) error {
	if err := c.VerifyMAC(masterKey); err != nil {
		return err
	}
	_, i, err := c.SlotByID(id)
	if err != nil {
		return err
	}
	if len(c.Slots) == 1 {
		return ErrLastSlot
	}
	return c.setSlots(masterKey, slices.Delete(slices.Clone(c.Slots), i, i+1))
}

// ReplaceSlot replaces the slot with ID h.ID (keeping its place) by one
// with header h wrapping masterKey under secret: a password change. On
// error c is unchanged.
func (c *Config) ReplaceSlot(masterKey []byte, h SlotHeader, secret []byte, rand io.Reader) error {
	if err := c.VerifyMAC(masterKey); err != nil {
		return err
	}
	_, i, err := c.SlotByID(h.ID)
	if err != nil {
		return err
	}
	s, err := c.newSlot(h, secret, masterKey, rand)
	if err != nil {
		return err
	}
	slots := slices.Clone(c.Slots)
	slots[i] = s
	return c.setSlots(masterKey, slots)
}

// newSlot validates h, encodes it and seals masterKey for it.
func (c *Config) newSlot(h SlotHeader, secret, masterKey []byte, rand io.Reader) (Slot, error) {
	if err := h.Validate(); err != nil {
		return Slot{}, err
	}
	raw, err := encodeHeader(h)
	if err != nil {
		return Slot{}, err
	}
	wrapped, err := sealSlot(c.slotParams(), raw, secret, masterKey, rand)
	if err != nil {
		return Slot{}, err
	}
	return Slot{Header: h, Wrapped: wrapped, rawHeader: raw}, nil
}

// setSlots makes slots the config's slot set, with its stored bytes and a
// new MAC; c is changed only if every step succeeds.
func (c *Config) setSlots(masterKey []byte, slots []Slot) error {
	if err := validateSlots(slots); err != nil {
		return err
	}
	raw := encodeSlots(slots)
	mac, err := computeMAC(masterKey, c.rawParams, raw, c.rawSlotParams, c.epochs.macTail())
	if err != nil {
		return err
	}
	c.Slots, c.rawSlots, c.MAC, c.raw = slots, raw, mac, nil
	return nil
}
