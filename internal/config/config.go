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

// BackupName is where passwd keeps the previous config, so that a password
// change interrupted or regretted can be undone by hand.
const BackupName = FileName + ".bak"

// FormatVersion is the newest on-disk format this build reads and writes.
const FormatVersion = 1

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
)

// Params are the authenticated vault parameters.
type Params struct {
	FormatVersion int
	FeatureFlags  []string
	Cipher        string // content.Algorithm
	ChunkSize     int
	KDF           kdf.Params
	Reverse       bool // the vault describes a reverse-mode view
}

// Config is a parsed config file.
type Config struct {
	Creator      string
	Params       Params
	EncryptedKey []byte

	// rawParams is the exact byte string of the "Params" JSON value as
	// stored. It is the associated data of the key wrap, so it must be
	// written back byte for byte: re-encoding Params could change
	// whitespace or field order and break unlocking.
	rawParams []byte
}

// NewParams returns v1 params with every v1 feature flag set.
func NewParams(cipher string, chunkSize int, k kdf.Params) Params {
	return Params{
		FormatVersion: FormatVersion,
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
func (c *Config) Unlock(password []byte) ([]byte, error) {
	return c.unwrap(password)
}

// Rewrap wraps masterKey under a new password with new KDF params (fresh salt),
// leaving every other parameter as it is. k must come from kdf.New (a fresh
// salt); on error the config is unchanged.
func (c *Config) Rewrap(masterKey, password []byte, k kdf.Params, rand io.Reader) error {
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
	next := &Config{Creator: c.Creator, Params: p, rawParams: raw}
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
