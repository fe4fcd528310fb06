package cli

import (
	"errors"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/session"
)

// The CLI opens vaults only through internal/session (and the vault
// package, which wraps a session): it loads the config itself, to tell a
// missing vault from a corrupt config before asking for a secret, and
// hands that config, with the KDF memory bound loadConfig set on it, to
// the session, which unlocks it.

// openSession unlocks the forward vault in dir, whose config c was loaded
// by loadConfig, with secret: the master key if isMasterKey, else the
// password.
func openSession(dir string, c *config.Config, secret []byte, isMasterKey bool) (*session.Session, error) {
	o := session.Options{Config: c}
	var s *session.Session
	var err error
	if isMasterKey {
		s, err = session.OpenWithMasterKey(dir, secret, o)
	} else {
		s, err = session.Open(dir, secret, o)
	}
	return s, forwardError(err)
}

// forwardError gives the refusal of a reverse-mode vault its message.
func forwardError(err error) error {
	if errors.Is(err, session.ErrReverse) {
		return withCode(ExitUnsupported, errors.New("this is a reverse-mode vault; it cannot be opened in forward mode"))
	}
	return err
}

// checkMasterKey tells whether the master key s was opened with is the
// vault's (session.CheckMasterKey): a wrong one is ExitWrongPassword.
func checkMasterKey(s *session.Session) (checked bool, err error) {
	checked, err = s.CheckMasterKey()
	if errors.Is(err, session.ErrWrongMasterKey) {
		return false, errorfCode(ExitWrongPassword, "wrong master key: no file name in the vault's root decrypts with it")
	}
	return checked, err
}
