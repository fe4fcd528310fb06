package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/encryptfs/encryptfs/internal/session"
)

// loadAnyConfig loads dir's config: the reverse-mode one with reverse,
// else the forward one, or, when dir has none, a reverse-mode one after all
// (with a note on stderr). isReverse tells which was read.
func (a *App) loadAnyConfig(dir string, reverse bool) (c *session.Config, isReverse bool, err error) {
	if reverse {
		c, err = a.loadReverseConfig(dir)
		return c, err == nil, err
	}
	c, err = a.loadConfig(dir)
	if errors.Is(err, session.ErrConfigNotFound) {
		if rc, rerr := a.loadReverseConfig(dir); rerr == nil {
			fmt.Fprintf(a.Stderr, "encryptfs: %s is set up for reverse mode (%s)\n", dir, session.ReverseConfigFileName)
			return rc, true, nil
		}
	}
	return c, false, err
}

// loadConfig loads CIPHERDIR's config with the CIPHERDIR problems told
// apart: missing directory, not a vault, corrupt config (including one
// that is not a regular file or too large, see config.ReadFile). Unlocking
// it is limited to the memory this machine has (limitKDFMemory).
func (a *App) loadConfig(dir string) (*session.Config, error) {
	if err := checkDir(dir, ExitCipherDir, "CIPHERDIR"); err != nil {
		return nil, err
	}
	c, err := session.LoadConfig(dir)
	if err != nil {
		return nil, configLoadError(dir, err)
	}
	a.limitKDFMemory(c)
	return c, nil
}

// configLoadError says what is wrong with dir's encryptfs.conf, and what
// to do, in one sentence.
func configLoadError(dir string, err error) error {
	switch {
	case errors.Is(err, session.ErrConfigNotFound):
		return reword(err, "%s has no encryptfs.conf, so it is not a vault (wrong directory? encryptfs init DIR makes a vault in an empty directory)", dir)
	case errors.Is(err, session.ErrConfigCorrupt):
		detail := strings.TrimPrefix(err.Error(), session.ErrConfigCorrupt.Error())
		detail = strings.TrimPrefix(detail, ": ")
		return reword(err, "%s is corrupt or was edited (%s); put back a copy of this vault's encryptfs.conf from a backup", filepath.Join(dir, session.ConfigFileName), withoutInternalPrefixes(detail))
	}
	return fmt.Errorf("%s: %w", dir, err)
}

// loadReverseConfig loads PLAINDIR's reverse config, telling apart a
// missing directory, a directory never set up, and a corrupt config.
func (a *App) loadReverseConfig(dir string) (*session.Config, error) {
	if err := checkDir(dir, ExitCipherDir, "PLAINDIR"); err != nil {
		return nil, err
	}
	c, err := session.LoadReverseConfig(dir)
	if errors.Is(err, session.ErrConfigNotFound) {
		return nil, errorfCode(ExitCipherDir, "%s has no %s; set it up with: encryptfs init --reverse %s", dir, session.ReverseConfigFileName, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if session.Algorithm(c.Params.Cipher) != session.AES256SIV {
		return nil, errorfCode(ExitUnsupported, "%s: reverse mode needs cipher %s, the config has %s", dir, session.AES256SIV, c.Params.Cipher)
	}
	a.limitKDFMemory(c)
	return c, nil
}
