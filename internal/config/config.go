// Package config reads, writes and unlocks encryptfs.conf: strict JSON, the
// Argon2id parameters, and the master key wrapped with AES-256-GCM whose
// associated data is the exact bytes of the Params object, so that editing any
// parameter is detected (docs/format.md, "Config").
package config

import (
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

// FileName is the config's name in CIPHERDIR (and in PLAINDIR in reverse mode).
const FileName = "encryptfs.conf"

// ReverseFileName is the reverse-mode config's name in PLAINDIR
// (docs/reverse.md). The reverse view hides it and shows its bytes in the
// view's root as encryptfs.conf, so that a copy of the view opens as a
// forward vault with the same password.
const ReverseFileName = ".encryptfs.reverse.conf"

// UpgradeMarkerName is the file in CIPHERDIR that says a content upgrade
// (encryptfs upgrade adding BoundLocations, docs/format.md §14, "Upgrading") is under
// way: it holds the VaultID the upgrade binds to, and a vault whose
// config does not have the feature yet is refused while it exists.
const UpgradeMarkerName = "encryptfs.upgrade"

// BackupName is where passwd of encryptfs 0.1.0 kept the previous config.
// passwd no longer writes it (a copy of the old config inside a synced
// CIPHERDIR keeps the old password working forever); fsck still knows the
// name, since older vaults may have one.
const BackupName = FileName + ".bak"

// Format versions. FormatVersion1 is the original password-only config
// (docs/format.md §3); FormatVersion2 stores the master key in key slots
// (docs/format.md §3a). Both are read and written; a vault keeps its
// version until it is upgraded explicitly (Upgrade).
const (
	FormatVersion1 = 1
	FormatVersion2 = 2
	// FormatVersion is the newest on-disk format this build reads and
	// writes.
	FormatVersion = FormatVersion2
)

// DefaultCreator is the informational Creator written by Create; the CLI
// overwrites it with its own version string.
const DefaultCreator = "encryptfs"

// Feature flags of format version 1. All are mandatory: they document what a
// vault uses, and a flag this build does not know refuses to open.
const (
	FlagHKDF               = "HKDF"
	FlagDirID              = "DirID"
	FlagLongNames          = "LongNames"
	FlagAuthenticatedHoles = "AuthenticatedHoles"
	FlagFinalChunkFlag     = "FinalChunkFlag"
)

// FlagKeyEpochs marks a format-2 config whose master key is the newest of
// a chain of epoch keys (epochs.go, docs/format.md §3b). Optional: a
// format-2 config without it is epoch 0.
const FlagKeyEpochs = "KeyEpochs"

// FlagKeyslots marks a format-2 config whose master key is stored in key
// slots (docs/format.md §3a). Format 2's later content features (location
// binding, per-file Merkle roots, freshness manifests, a master-key epoch)
// arrive as further flags of format 2, not as new versions.
const FlagKeyslots = "Keyslots"

// RequiredFlagsV2 returns the feature flags every format-2 config carries
// today: the v1 content flags (format 2 stores content exactly as format 1)
// and Keyslots. A fresh slice each call.
func RequiredFlagsV2() []string { return append(RequiredFlags(), FlagKeyslots) }

// RequiredFlags returns the feature flags every v1 vault carries, in their
// canonical order. A fresh slice each call: callers may keep or modify it.
func RequiredFlags() []string {
	return []string{FlagHKDF, FlagDirID, FlagLongNames, FlagAuthenticatedHoles, FlagFinalChunkFlag}
}

// Errors. The CLI maps each to its own exit code.
var (
	ErrWrongPassword  = errors.New("config: wrong password")
	ErrCorrupt        = errors.New("config: corrupt or edited config file")
	ErrFutureVersion  = errors.New("config: vault format is newer than this encryptfs")
	ErrUnknownFeature = errors.New("config: vault uses an unknown feature flag")
	ErrNotFound       = errors.New("config: no encryptfs.conf in this directory")
	// ErrKDFMemory: the config asks Argon2id for more memory than the
	// caller allows (LimitKDFMemory); refused before any is allocated.
	ErrKDFMemory = errors.New("config: KDF memory cost exceeds the memory available")
)

// Errors of format 2's key slots (docs/format.md §3a).
var (
	// ErrNoSlotMatch: none of the credentials offered opens any key slot
	// (a wrong password, keyfile, recovery key or age identity; an
	// edited slot looks the same).
	ErrNoSlotMatch = errors.New("config: no key slot opens with the credentials given")
	// ErrTampered: a slot opened, but the config's MAC does not verify
	// under the master key it gave: the slot set or Params were edited
	// (a slot added, removed, reordered or changed by whoever can write
	// CIPHERDIR). Nothing is changed; the vault is refused.
	ErrTampered = errors.New("config: the key slots or parameters were edited (config MAC mismatch)")
	// ErrLastSlot: removing the config's only slot would lock everyone out.
	ErrLastSlot = errors.New("config: refusing to remove the last key slot")
	// ErrDuplicateSlot: two slots of a config have the same ID.
	ErrDuplicateSlot = errors.New("config: two key slots have the same ID")
	// ErrUnknownSlot: no slot of the config has the ID asked for, or it
	// is not of the type the operation needs.
	ErrUnknownSlot = errors.New("config: no such key slot")
	// ErrSlotLimit: the config already has MaxSlots slots.
	ErrSlotLimit = errors.New("config: too many key slots")
	// ErrNotV2: a key slot operation on a format-1 config (upgrade first).
	ErrNotV2 = errors.New("config: the vault's config is format 1, without key slots (upgrade it first)")
	// ErrNotV1: a format-1 operation (Rewrap, Upgrade) on a format-2 config.
	ErrNotV1 = errors.New("config: the vault's config is already format 2")
	// ErrReverseV2: format 2 has no reverse mode; a reverse config stays
	// format 1.
	ErrReverseV2 = errors.New("config: a reverse-mode config cannot use format 2 (key slots)")
)

// Params are the authenticated vault parameters. In a format-2 config KDF
// is the zero value (each password slot has its own, SlotHeader.KDF) and
// Reverse is false (format 2 is forward-only; see Upgrade).
type Params struct {
	FormatVersion int
	FeatureFlags  []string
	Cipher        string // content.Algorithm
	ChunkSize     int
	KDF           kdf.Params
	Reverse       bool // the vault describes a reverse-mode view
	// VaultID is the vault's random 16-byte identity (format 2 with
	// FlagBoundLocations only, features.go): the parent ID of the
	// root's location binding (docs/format.md §14). omitempty: format 1's
	// Params encode exactly as before.
	VaultID []byte `json:",omitempty"`
}

// Config is a parsed config file. A format-1 config has EncryptedKey; a
// format-2 config has Slots and MAC instead.
type Config struct {
	Creator      string
	Params       Params
	EncryptedKey []byte // format 1 only

	// Slots are the key slots of a format-2 config, in stored order.
	// Read them; change them only through AddSlot, RemoveSlot and
	// ReplaceSlot, which keep rawSlots and MAC in step.
	Slots []Slot
	// MAC is HMAC-SHA256 over Params and Slots (format 2, slotmac.go).
	MAC []byte
	// epochs is the master-key epoch state of a format-2 config with the
	// KeyEpochs flag (epochs.go); the zero value is epoch 0.
	epochs epochState
	// rawSlots is the exact byte string of the "Slots" JSON array as
	// stored: the MAC covers it, so it is written back byte for byte.
	rawSlots []byte

	// rawParams is the exact byte string of the "Params" JSON value as
	// stored. It is the associated data of the key wrap, so it must be
	// written back byte for byte: re-encoding Params could change
	// whitespace or field order and break unlocking.
	rawParams []byte
	// rawSlotParams is the exact "SlotParams" value of a format-2 config
	// whose Params were changed after its slots were sealed (UpgradeParams):
	// the Params bytes every slot's wrap authenticates. nil: the slots
	// authenticate rawParams.
	rawSlotParams []byte

	// raw is the whole file as parsed (nil for a config made by Create):
	// reverse mode shows exactly the bytes it unlocked (Raw).
	raw []byte

	// maxKDFMemoryKiB, when not 0, is the most memory Unlock and Rewrap
	// may give Argon2id (see LimitKDFMemory).
	maxKDFMemoryKiB uint64
	// passwordKDFRuns counts the Argon2id runs of PasswordSecret on this
	// Config, for the tests that bound them (MaxPasswordSlots).
	passwordKDFRuns int
}

// Raw returns the bytes c was parsed from, or nil if c was not parsed
// (Create); the caller must not change them.
func (c *Config) Raw() []byte { return c.raw }

// LimitKDFMemory makes Unlock and Rewrap refuse (ErrKDFMemory), before
// Argon2id runs, a memory cost above kib; 0 means no limit below
// kdf.MaxMemoryKiB. Why: the password path must run Argon2id before the MAC
// can show the config was forged, so without a limit a forged config at the
// 4 GiB ceiling makes every unlock allocate 4 GiB (docs/format.md §3). The
// caller passes what the machine can give (the CLI: MemAvailable); a real
// vault whose cost is above that could not be unlocked here anyway without
// swapping or being killed.
func (c *Config) LimitKDFMemory(kib uint64) { c.maxKDFMemoryKiB = kib }

// NewParams returns v1 params with every v1 feature flag set.
func NewParams(cipher string, chunkSize int, k kdf.Params) Params {
	return Params{
		FormatVersion: FormatVersion1,
		FeatureFlags:  RequiredFlags(),
		Cipher:        cipher,
		ChunkSize:     chunkSize,
		KDF:           k,
	}
}

// Create makes a fresh random master key (from rand) and wraps it under
// password. The caller saves the config and shows the master key once.
func Create(p Params, password []byte, rand io.Reader) (*Config, []byte, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	raw, err := encodeParams(p)
	if err != nil {
		return nil, nil, err
	}
	masterKey := make([]byte, keys.MasterKeySize)
	if _, err := io.ReadFull(rand, masterKey); err != nil {
		return nil, nil, fmt.Errorf("config: reading random master key: %w", err)
	}
	c := &Config{Creator: DefaultCreator, Params: p, rawParams: raw}
	if err := c.wrap(masterKey, password, rand); err != nil {
		clear(masterKey)
		return nil, nil, err
	}
	return c, masterKey, nil
}

// Unlock derives the KEK and unwraps the master key, or ErrWrongPassword.
// A format-2 config is unlocked through its password slots (UnlockPassword):
// so every password caller (mount, vault.Open) opens either version.
func (c *Config) Unlock(password []byte) ([]byte, error) {
	if c.Params.FormatVersion == FormatVersion2 {
		master, _, err := c.UnlockPassword(password)
		return master, err
	}
	return c.unwrap(password)
}

// IsV2 reports whether c is a format-2 (key slot) config.
func (c *Config) IsV2() bool { return c.Params.FormatVersion == FormatVersion2 }

// Rewrap wraps masterKey under a new password with new KDF params (fresh salt),
// leaving every other parameter as it is. k must come from kdf.New (a fresh
// salt); on error the config is unchanged.
func (c *Config) Rewrap(masterKey, password []byte, k kdf.Params, rand io.Reader) error {
	if c.IsV2() {
		// A v2 config has no one password: the caller names the slot
		// (ChangePassword), which Rewrap cannot.
		return fmt.Errorf("config: rewrap: %w", ErrNotV1)
	}
	if len(masterKey) != keys.MasterKeySize {
		return fmt.Errorf("config: rewrap: %w", keys.ErrMasterKey)
	}
	p := c.Params
	p.FeatureFlags = append([]string(nil), c.Params.FeatureFlags...)
	p.KDF = k
	if err := p.Validate(); err != nil {
		return err
	}
	raw, err := encodeParams(p)
	if err != nil {
		return err
	}
	next := &Config{Creator: c.Creator, Params: p, rawParams: raw, maxKDFMemoryKiB: c.maxKDFMemoryKiB}
	if err := next.wrap(masterKey, password, rand); err != nil {
		return err
	}
	*c = *next
	return nil
}

// RawParams returns a copy of the exact bytes of the stored "Params" value
// (the associated data of the key wrap, after its prefix).
func (c *Config) RawParams() []byte {
	return append([]byte(nil), c.rawParams...)
}
