package session

import (
	"io"

	"github.com/encryptfs/encryptfs/internal/config"
)

// The config administration of the CLI (info, init, passwd, key,
// upgrade, freshness forget): loading a config to tell a missing vault
// from a corrupt one before any secret is asked for, the names, flags and
// slot types it shows and checks, and the edits that are not a key slot
// change of an unlocked session (a format-1 password change, a reverse
// config). They are re-exported or wrapped here so that the CLI reaches
// configs only through the session, as every other door does.

// Config is a vault's config (encryptfs.conf), or a PLAINDIR's reverse
// config, as loaded before unlocking; Options.Config hands it back to the
// session, which unlocks it.
type Config = config.Config

// Params, NewParams and ErrWrongPassword, which the CLI uses too, are
// re-exported for the vault package in engine.go.

// The config's file names in CIPHERDIR (or, reverse, PLAINDIR).
const (
	ConfigFileName        = config.FileName
	ReverseConfigFileName = config.ReverseFileName
	// UpgradeMarkerName is the marker an interrupted content upgrade
	// leaves in CIPHERDIR (upgrade resumes it).
	UpgradeMarkerName = config.UpgradeMarkerName
)

// The config format versions.
const (
	FormatVersion1 = config.FormatVersion1
	FormatVersion2 = config.FormatVersion2
)

// The optional format-2 features (Params.FeatureFlags), and the size of
// the VaultID that location binding draws.
const (
	FlagFileRoots    = config.FlagFileRoots
	FlagCompactRoots = config.FlagCompactRoots
	FlagTrimmed      = config.FlagTrimmedLeaves
	FlagFreshness    = config.FlagFreshness
	FlagBuckets      = config.FlagManifestBuckets
	VaultIDSize      = config.VaultIDSize
)

// The key slot types of a format-2 config, and the bounds of its slots.
const (
	SlotPassword = config.SlotPassword
	SlotKeyfile  = config.SlotKeyfile
	SlotRecovery = config.SlotRecovery
	SlotAge      = config.SlotAge

	MaxSlots             = config.MaxSlots
	MinSlotID, MaxSlotID = config.MinSlotID, config.MaxSlotID
)

// The config's refusals, as the CLI tells them apart (its exit codes come
// from internal/fault; these only choose the message).
var (
	ErrConfigNotFound = config.ErrNotFound    // no encryptfs.conf: not a vault
	ErrConfigCorrupt  = config.ErrCorrupt     // unparsable, or not a small regular file
	ErrNoSlotMatch    = config.ErrNoSlotMatch // no key slot opens with the credentials given
	ErrTampered       = config.ErrTampered    // a slot opened, the config MAC does not verify
	ErrLastSlot       = config.ErrLastSlot    // removing the last key slot
	ErrUnknownSlot    = config.ErrUnknownSlot // no such key slot ID
	ErrSlotLimit      = config.ErrSlotLimit   // MaxSlots reached
	ErrNotV2          = config.ErrNotV2       // a format-1 config has no key slots
	ErrReverseV2      = config.ErrReverseV2   // a reverse config stays format 1
)

// LoadConfig reads and parses CIPHERDIR's encryptfs.conf, strictly
// (ErrConfigNotFound, ErrConfigCorrupt); it does not unlock it.
func LoadConfig(dir string) (*Config, error) { return config.Load(dir) }

// LoadReverseConfig reads and parses PLAINDIR's reverse config.
func LoadReverseConfig(dir string) (*Config, error) {
	return config.LoadFile(dir, config.ReverseFileName)
}

// NewParamsV2 returns the parameters of a new format-2 vault, before its
// features (Params.WithBoundLocations, Params.WithFeature).
func NewParamsV2(alg string, chunk int) Params { return config.NewParamsV2(alg, chunk) }

// WriteConfigBackup writes a copy of a config (passwd --backup) to a new
// file at path, outside the vault; it refuses an existing file.
func WriteConfigBackup(path string, data []byte) error { return config.WriteBackup(path, data) }

// CreateConfig makes a new format-1 config (init --reverse's reverse
// config): a new master key, drawn from rand and wrapped under password
// with p's KDF, and creator as its Creator. The caller shows the master
// key once and clears it.
func CreateConfig(p Params, creator string, password []byte, rand io.Reader) (*Config, []byte, error) {
	c, masterKey, err := config.Create(p, password, rand)
	if err != nil {
		return nil, nil, err
	}
	c.Creator = creator
	return c, masterKey, nil
}

// SaveReverseConfig writes c as PLAINDIR's reverse config, atomically (a
// temporary file, fsync, rename).
func SaveReverseConfig(dir string, c *Config) error {
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	return config.WriteFileAtomic(dir, config.ReverseFileName, data)
}
