// Package config reads, writes and unlocks encryptfs.conf: strict JSON, the
// Argon2id parameters, and the master key wrapped with AES-256-GCM whose
// associated data is the exact bytes of the Params object, so that editing any
// parameter is detected (docs/format.md, "Config").
package config

import (
	"errors"
	"io"

	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
)

// FileName is the config's name in CIPHERDIR (and in PLAINDIR in reverse mode).
const FileName = "encryptfs.conf"

// FormatVersion is the newest on-disk format this build reads and writes.
const FormatVersion = 1

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
}

// NewParams returns v1 params with every v1 feature flag set.
func NewParams(cipher string, chunkSize int, k kdf.Params) Params { panic("TODO") }

// Create makes a fresh random master key (from rand) and wraps it under
// password. The caller saves the config and shows the master key once.
func Create(p Params, password []byte, rand io.Reader) (*Config, []byte, error) { panic("TODO") }

// Parse decodes strictly and validates a config file's bytes.
func Parse(data []byte) (*Config, error) { panic("TODO") }

// Load reads and parses dir/encryptfs.conf.
func Load(dir string) (*Config, error) { panic("TODO") }

// Unlock derives the KEK and unwraps the master key, or ErrWrongPassword.
func (c *Config) Unlock(password []byte) ([]byte, error) { panic("TODO") }

// Rewrap wraps masterKey under a new password with new KDF params (fresh salt),
// leaving every other parameter as it is.
func (c *Config) Rewrap(masterKey, password []byte, k kdf.Params, rand io.Reader) error {
	panic("TODO")
}

// Marshal encodes the config as stored (indented JSON, trailing newline).
func (c *Config) Marshal() ([]byte, error) { panic("TODO") }

// Save writes dir/encryptfs.conf atomically (temp, fsync, rename, fsync dir),
// mode 0400.
func (c *Config) Save(dir string) error { panic("TODO") }
