package session

import (
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/engine"
)

// withVault builds s's engine (internal/engine) from its tree, content
// engine and backing FS: the one open-file table and place-checked open
// of the vault, which every door shares. The session owns it and closes
// it first on Close.
func withVault(s *Session) *Session {
	s.vault = engine.New(s.dir, s.tree, s.engine, s.fs)
	return s
}

// Vault returns the vault's engine: the directory and file handles every
// door goes through.
func (s *Session) Vault() *engine.Vault { return s.vault }

// What the public vault package needs from below the session, re-exported
// so that it imports no config, core or tree package of its own.

// ErrWrongPassword: the password does not unwrap the master key.
var ErrWrongPassword = config.ErrWrongPassword

// Params are a vault's parameters as its config stores them.
type Params = config.Params

// NewParams returns the parameters of a new format-1 vault: cipher alg,
// chunk size chunk and Argon2id parameters k (config.NewParams).
func NewParams(alg string, chunk int, k KDFParams) Params { return config.NewParams(alg, chunk, k) }
