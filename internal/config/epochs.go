package config

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

// Master-key epochs (feature flag KeyEpochs; docs/format.md §3b,
// docs/design/format-v2.md §3). The vault key is a chain K_0 … K_e:
// K_0 is the master key made by init, each revoke (Revoke) draws a fresh
// random K_{e+1}. The slots wrap the current K_e, the config MAC is keyed
// from K_e, and the config carries the older keys sealed under K_e:
//
//	"Epoch": e,
//	"OldEpochs": base64(nonce(12) ‖ AES-256-GCM(sealKey, nonce, K_0 ‖ … ‖ K_{e-1}, AD) ‖ tag(16))
//	sealKey = HKDF-SHA256(K_e, salt = none, info = "encryptfs v2 epoch seal")
//	AD      = "encryptfs.conf v2 epochs" ‖ 0x00 ‖ Params bytes ‖ 0x00 ‖ e (u32, big endian)
//
// Whoever opens a slot (or holds K_e) gets every older key, so objects
// written under an older epoch stay readable; whoever kept an older config
// and a credential revoked since gets only the keys up to that epoch.
const (
	// epochSealLabel names the key that seals the older epoch keys. Why
	// a label of its own: the seal key must never equal another subkey
	// of K_e (the config MAC key, the content keys of epoch e).
	epochSealLabel = "encryptfs v2 epoch seal"
	// epochADPrefix starts the seal's associated data. Why Params and e
	// in it: the sealed chain cannot be moved to a config with other
	// parameters, nor read as a chain of another length (e fixes how
	// many keys it holds); the MAC covers it as well, but the AEAD
	// refuses on its own, before a key of the chain is used.
	epochADPrefix = "encryptfs.conf v2 epochs\x00"
	// MaxEpochs bounds the epoch number: 32 bytes of config per epoch,
	// so 1024 epochs add 32 KiB (base64: 44 KiB), far below
	// MaxFileSize; a vault revoked more often than that needs a new one.
	MaxEpochs = 1024
)

// Errors of epochs.
var (
	// ErrEpochLimit: the config is at MaxEpochs; no further revoke.
	ErrEpochLimit = errors.New("config: the vault's master key was revoked too many times (epoch limit)")
)

// epochState is the epoch part of a format-2 config: the current epoch
// number and the sealed older keys (nil at epoch 0).
type epochState struct {
	current uint32
	sealed  []byte
}

// sealedSize is the stored size of the sealed chain at epoch e.
func sealedSize(e uint32) int { return wrapNonceSize + int(e)*keys.MasterKeySize + wrapTagSize }

// parseEpochs checks the stored epoch fields against Params: a config with
// "Epoch" needs the KeyEpochs flag and the reverse, epoch ≥ 1 (epoch 0 is
// a config without the fields), at most MaxEpochs, and a sealed chain of
// exactly the size e keys take.
func parseEpochs(p Params, epoch *uint32, sealed []byte) (epochState, error) {
	flag := slices.Contains(p.FeatureFlags, FlagKeyEpochs)
	if epoch == nil && sealed == nil && !flag {
		return epochState{}, nil
	}
	if !flag || epoch == nil || sealed == nil {
		return epochState{}, fmt.Errorf("%w: the KeyEpochs flag, Epoch and OldEpochs go together", ErrCorrupt)
	}
	if *epoch < 1 || *epoch > MaxEpochs {
		return epochState{}, fmt.Errorf("%w: Epoch %d out of range 1..%d", ErrCorrupt, *epoch, MaxEpochs)
	}
	if len(sealed) != sealedSize(*epoch) {
		return epochState{}, fmt.Errorf("%w: OldEpochs is %d bytes, want %d for epoch %d", ErrCorrupt, len(sealed), sealedSize(*epoch), *epoch)
	}
	return epochState{current: *epoch, sealed: append([]byte(nil), sealed...)}, nil
}

// macTail is what the epoch state adds to the config MAC's input: nothing
// at epoch 0 (so a format-2 config without epochs keeps its MAC), else
// 0x00 ‖ e (u32, big endian) ‖ the sealed chain. Fixed sizes, so the
// parts cannot be shifted into each other.
func (e epochState) macTail() []byte {
	if e.current == 0 {
		return nil
	}
	t := []byte{0}
	t = binary.BigEndian.AppendUint32(t, e.current)
	return append(t, e.sealed...)
}

// write adds the stored fields (after Slots) to a config being marshalled.
func (e epochState) write(buf *bytes.Buffer) {
	if e.current == 0 {
		return
	}
	buf.WriteString(",\n\t\"Epoch\": ")
	buf.WriteString(strconv.FormatUint(uint64(e.current), 10))
	buf.WriteString(",\n\t\"OldEpochs\": \"")
	buf.WriteString(base64.StdEncoding.EncodeToString(e.sealed))
	buf.WriteString("\"")
}

// Epoch is the config's current master-key epoch (0 without KeyEpochs).
func (c *Config) Epoch() uint32 { return c.epochs.current }

// epochAEAD is AES-256-GCM under the seal key derived from the current
// epoch key.
func epochAEAD(current []byte) (cipher.AEAD, error) {
	if len(current) != keys.MasterKeySize {
		return nil, fmt.Errorf("config: %w", keys.ErrMasterKey)
	}
	k, err := hkdf.Key(sha256.New, current, nil, epochSealLabel, 32)
	if err != nil {
		return nil, fmt.Errorf("config: derive epoch seal key: %w", err)
	}
	defer clear(k)
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// epochAD is epochADPrefix ‖ Params bytes ‖ 0x00 ‖ e.
func epochAD(rawParams []byte, e uint32) []byte {
	ad := append([]byte(epochADPrefix), rawParams...)
	ad = append(ad, 0)
	return binary.BigEndian.AppendUint32(ad, e)
}

// sealEpochs seals chain (K_0 … K_{e-1}) under current (K_e). Why a random
// 12-byte nonce is safe: every K_e is fresh random and seals one chain,
// the one made with it by Revoke, again (the same chain, new AD) only when
// an upgrade changes the Params bytes (resealEpochs): a handful of seals
// per key, each with its own random 96-bit nonce, far inside GCM's bound
// for random nonces (a fixed nonce would not be safe here).
func sealEpochs(current, rawParams []byte, e uint32, chain [][]byte, rand io.Reader) ([]byte, error) {
	aead, err := epochAEAD(current)
	if err != nil {
		return nil, err
	}
	plain := make([]byte, 0, len(chain)*keys.MasterKeySize)
	for _, k := range chain {
		if len(k) != keys.MasterKeySize {
			return nil, fmt.Errorf("config: seal epochs: %w", keys.ErrMasterKey)
		}
		plain = append(plain, k...)
	}
	defer clear(plain)
	nonce := make([]byte, wrapNonceSize, sealedSize(e))
	if _, err := io.ReadFull(rand, nonce); err != nil {
		return nil, fmt.Errorf("config: reading random nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, plain, epochAD(rawParams, e)), nil
}

// EpochKeys returns the older epoch keys K_0 … K_{e-1} of the config,
// unsealed with current (K_e, what a slot gave): nil at epoch 0. The MAC
// must have been checked under current (OpenSlot, VerifyMAC). A failure
// is ErrTampered: the MAC verified, so only a wrong key or an edit the
// MAC missed could cause it. The caller clears the keys.
func (c *Config) EpochKeys(current []byte) ([][]byte, error) {
	e := c.epochs.current
	if e == 0 {
		return nil, nil
	}
	aead, err := epochAEAD(current)
	if err != nil {
		return nil, err
	}
	s := c.epochs.sealed
	plain, err := aead.Open(nil, s[:wrapNonceSize], s[wrapNonceSize:], epochAD(c.rawParams, e))
	if err != nil {
		return nil, fmt.Errorf("%w: the older epoch keys do not open", ErrTampered)
	}
	chain := make([][]byte, e)
	for i := range chain {
		chain[i] = plain[i*keys.MasterKeySize : (i+1)*keys.MasterKeySize : (i+1)*keys.MasterKeySize]
	}
	return chain, nil
}

// resealEpochs returns c's epoch state with the older keys sealed again
// for Params bytes rawParams (UpgradeParams: the AD binds them), under the
// same current key and epoch number; c's own at epoch 0 (nothing sealed).
// current must be c's key, its MAC checked.
func (c *Config) resealEpochs(current, rawParams []byte, rand io.Reader) (epochState, error) {
	e := c.epochs.current
	if e == 0 {
		return c.epochs, nil
	}
	chain, err := c.EpochKeys(current)
	if err != nil {
		return epochState{}, err
	}
	defer func() {
		for _, k := range chain {
			clear(k)
		}
	}()
	sealed, err := sealEpochs(current, rawParams, e, chain, rand)
	if err != nil {
		return epochState{}, err
	}
	return epochState{current: e, sealed: sealed}, nil
}

// KeptSlot is a slot that Revoke keeps: its new header (the same ID; a
// fresh salt, KDF salt or age file) and the slot secret it opens with.
type KeptSlot struct {
	Header SlotHeader
	Secret []byte
}

// Revoke returns the config of the next epoch: next (a fresh random key,
// K_{e+1}) becomes the current key, the chain K_0 … K_e is sealed under
// it, and the slots are exactly kept, in that order, each wrapping next.
// Every slot of c not in kept is gone; a copy of c kept by anyone opens
// only up to K_e, so it reads no object made from now on. current must be
// c's key (the MAC is checked first). Params get the KeyEpochs flag if
// they lack it (so their bytes, and every slot's wrap, change: all slots
// are new anyway). c is not changed; the caller saves the result.
func (c *Config) Revoke(current, next []byte, kept []KeptSlot, rand io.Reader) (*Config, error) {
	if !c.IsV2() {
		return nil, ErrNotV2
	}
	if err := c.VerifyMAC(current); err != nil {
		return nil, err
	}
	if len(next) != keys.MasterKeySize {
		return nil, fmt.Errorf("config: revoke: %w", keys.ErrMasterKey)
	}
	if bytes.Equal(next, current) {
		return nil, errors.New("config: revoke: the next epoch key equals the current one")
	}
	e := c.epochs.current + 1
	if e > MaxEpochs {
		return nil, ErrEpochLimit
	}
	chain, err := c.EpochKeys(current)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, k := range chain {
			clear(k)
		}
	}()
	chain = append(chain, append([]byte(nil), current...))
	n := &Config{Creator: c.Creator, Params: c.Params, rawParams: c.rawParams, maxKDFMemoryKiB: c.maxKDFMemoryKiB}
	if !slices.Contains(c.Params.FeatureFlags, FlagKeyEpochs) {
		n.Params.FeatureFlags = append(slices.Clone(c.Params.FeatureFlags), FlagKeyEpochs)
		if err := n.Params.Validate(); err != nil {
			return nil, err
		}
		if n.rawParams, err = encodeParamsV2(n.Params); err != nil {
			return nil, err
		}
	}
	sealed, err := sealEpochs(next, n.rawParams, e, chain, rand)
	if err != nil {
		return nil, err
	}
	n.epochs = epochState{current: e, sealed: sealed}
	slots := make([]Slot, 0, len(kept))
	for _, k := range kept {
		s, err := n.newSlot(k.Header, k.Secret, next, rand)
		if err != nil {
			return nil, err
		}
		slots = append(slots, s)
	}
	if err := n.setSlots(next, slots); err != nil {
		return nil, err
	}
	return n, nil
}
