package cli

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/encryptfs/encryptfs/internal/session"
)

// The CLI opens vaults only through internal/session (and the vault
// package, which wraps a session): it loads the config itself, to tell a
// missing vault from a corrupt config before asking for a secret, and
// hands that config, with the KDF memory bound loadConfig set on it, to
// the session, which unlocks it.

// openSession opens the forward vault in dir, whose config c was loaded
// by loadConfig, with secret: the master key if isMasterKey, else the
// password. The mount's daemon child uses it with the key its parent
// unlocked; the commands unlock with unlockVault.
// o are the session options beyond the config (freshness).
func openSession(dir string, c *session.Config, secret []byte, isMasterKey bool, o session.Options) (*session.Session, error) {
	o.Config = c
	var s *session.Session
	var err error
	if isMasterKey {
		s, err = session.OpenWithMasterKey(dir, secret, o)
	} else {
		s, err = session.Open(dir, secret, o)
	}
	return s, forwardError(err)
}

// unlockVault opens the forward vault in dir (config c, from loadConfig)
// with what u offers, through session.OpenWith: the one way every command
// unlocks. prompt is the password prompt. The session has no freshness
// (session.FreshnessOff): the commands that write the vault's tree, or
// check it, ask for it with unlockVaultWith (freshOptions).
//
// --recovery-key reads a key from stdin: on a format-1 vault the master key;
// on a format-2 vault it is tried as a recovery key first, then as the
// master key (the config MAC checks it). A master key on a format-1 vault
// is not checked here (checkMasterKey does, where the command needs it).
// A key from an age slot that could not be checked against the vault's
// names gets a one-line warning.
func (a *App) unlockVault(dir string, c *session.Config, u unlockFlags, prompt string) (*session.Session, error) {
	return a.unlockVaultWith(dir, c, u, prompt, session.Options{Config: c, Rand: a.Rand, FreshnessUse: session.FreshnessOff, SeenDir: seenDir("")})
}

// unlockVaultWith is unlockVault with session options o (upgrade opens a
// half-upgraded vault with o.Upgrading).
func (a *App) unlockVaultWith(dir string, c *session.Config, u unlockFlags, prompt string, o session.Options) (*session.Session, error) {
	if err := u.check(); err != nil {
		return nil, err
	}
	cr, wipe, err := a.credentials(c, u, prompt)
	defer wipe()
	if err != nil {
		return nil, err
	}
	var s *session.Session
	if u.masterKey {
		what := "master key"
		if c.IsV2() {
			what = "recovery key"
		}
		key, err := a.readMasterKey(what)
		if err != nil {
			return nil, err
		}
		defer clear(key)
		if c.IsV2() {
			cr.RecoveryKeys = append(cr.RecoveryKeys, append([]byte(nil), key...))
			s, err = session.OpenWith(dir, cr, o)
			if !errors.Is(err, session.ErrNoSlotMatch) {
				return a.opened(dir, s, err)
			}
			cr.RecoveryKeys = cr.RecoveryKeys[:len(cr.RecoveryKeys)-1]
		}
		cr.MasterKey = key
		s, err = session.OpenWith(dir, cr, o)
		if c.IsV2() && errors.Is(err, session.ErrTampered) {
			return nil, errorfCode(ExitWrongPassword, "%s: the key is neither a recovery key nor the master key of this vault (or encryptfs.conf was edited)", dir)
		}
		return a.opened(dir, s, err)
	}
	s, err = session.OpenWith(dir, cr, o)
	return a.opened(dir, s, err)
}

// opened gives the errors of unlocking their message and exit code, and
// warns when an age slot's key could not be checked.
func (a *App) opened(dir string, s *session.Session, err error) (*session.Session, error) {
	// The unlock's Argon2id buffers (512 MiB at the default cost, one
	// per password slot tried) are garbage now: give them back to the
	// OS at once. Go's scavenger would keep most of it mapped for
	// minutes, and a foreground mount (`mount -f`, systemd's way) held
	// 540 MB of RSS for its whole life (issue 22; 15 MB without).
	debug.FreeOSMemory()
	if err != nil {
		return nil, unlockError(dir, err)
	}
	if s.KeyCheck() == session.KeyUnverifiable {
		fmt.Fprintln(a.Stderr, "encryptfs: warning: the vault's root is empty, so the key the age slot gave could not be checked against it (a replaced encryptfs.conf would go unnoticed)")
	}
	return s, nil
}

// unlockError maps the refusals of session.OpenWith to one line each.
func unlockError(dir string, err error) error {
	switch {
	case errors.Is(err, session.ErrNoSlotMatch):
		// Not wrapped with %w: userMessage would print "wrong password".
		return errorfCode(ExitWrongPassword, "%s: %s (a wrong or removed keyfile, identity or key?)", dir, strings.TrimPrefix(err.Error(), "config: "))
	case errors.Is(err, session.ErrTampered):
		return errorfCode(ExitCorruptConfig, "%s: encryptfs.conf was edited: a key slot opened but the config's MAC does not verify; nothing was changed (%v)", dir, err)
	case errors.Is(err, session.ErrReverse):
		return forwardError(err)
	}
	if ExitCode(err) == ExitWrongPassword || ExitCode(err) == ExitPassword || ExitCode(err) == ExitUsage {
		return err
	}
	return fmt.Errorf("%s: %w", dir, err)
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

// unlockedByMasterKey tells whether s was opened with the master key of a
// format-1 vault, which only checkMasterKey can check.
func unlockedByMasterKey(s *session.Session, u unlockFlags) bool {
	id, _ := s.UnlockedBy()
	return u.masterKey && id == 0 && s.Params().FormatVersion == session.FormatVersion1
}
