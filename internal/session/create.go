package session

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/keyslot"
)

// CreateOptions describe a new vault.
type CreateOptions struct {
	// Params are the new vault's parameters, KDF salt included
	// (config.NewParams); they must Validate.
	Params config.Params
	// Creator is the informational creator string; "" keeps
	// config.DefaultCreator.
	Creator string
	// Options serve the session Create returns; Options.Rand also makes
	// the master key, the key wrap's nonce and the root directory ID.
	Options
}

// Create makes a new vault in dir, which must exist and be empty: a fresh
// master key wrapped under password, the root directory's ID, then the
// config (written last, so that a directory with a config is a complete
// vault). It is the one creation path: vault.Create and encryptfs init both
// call it. On failure dir is left empty again (so that creation can be
// retried). It returns the open session and the master key, which the
// caller shows once and clears.
func Create(dir string, password []byte, co CreateOptions) (*Session, []byte, error) {
	return create(dir, co, func() (*config.Config, []byte, error) {
		return config.Create(co.Params, password, co.engineOptions().Rand)
	})
}

// CreateWith is Create for a format-2 vault (docs/format.md §3a):
// co.Params come from config.NewParamsV2, and the config has the key slots
// first (at least one; IDs 1, 2, ... in order; a recovery slot's key is
// the caller's to draw with keyslot.NewRecoveryKey and show once). The
// session it returns keeps the config and master key for key management
// (AddSlot, RemoveSlot, ...), as OpenWith's does. The master key is
// returned too, for a caller that shows it.
func CreateWith(dir string, first []keyslot.NewSlot, co CreateOptions) (*Session, []byte, error) {
	var cfg *config.Config
	s, master, err := create(dir, co, func() (*config.Config, []byte, error) {
		c, m, err := keyslot.Create(co.Params, first, co.engineOptions().Rand)
		cfg = c
		return c, m, err
	})
	if err != nil {
		return nil, nil, err
	}
	data, err := cfg.Marshal()
	if err != nil {
		s.Close()
		clear(master)
		return nil, nil, err
	}
	s.ring = &keyring{cfg: cfg, onDisk: data, master: append([]byte(nil), master...)}
	return s, master, nil
}

// create is the one creation path: makeConfig returns the new config and
// its master key; the root's ID is written, then the config.
func create(dir string, co CreateOptions, makeConfig func() (*config.Config, []byte, error)) (*Session, []byte, error) {
	if err := co.Params.Validate(); err != nil {
		return nil, nil, err
	}
	if err := checkEmpty(dir); err != nil {
		return nil, nil, err
	}
	c, master, err := makeConfig()
	if err != nil {
		return nil, nil, err
	}
	if co.Creator != "" {
		c.Creator = co.Creator
	}
	// The feature flag "Freshness" does not record here: the root has
	// no ID yet, and a vault no device recorded is recorded whole by its
	// first writer (a mount). (Options.Freshness, the test hook, does.)
	o := co.Options
	o.FreshnessUse = FreshnessOff
	s, err := New(dir, co.Params, master, o)
	if err != nil {
		clear(master)
		return nil, nil, err
	}
	fail := func(err error) (*Session, []byte, error) {
		s.Close()
		clear(master)
		// Undo the root's ID so that dir is empty again; a missing one
		// (initRoot failed before writing it) is fine.
		os.Remove(filepath.Join(dir, DirIDFile))
		return nil, nil, err
	}
	if err := s.initRoot(); err != nil {
		return fail(err)
	}
	if err := c.Save(dir); err != nil {
		return fail(err)
	}
	return s, master, nil
}

// initRoot gives the new vault's root directory its random ID.
func (s *Session) initRoot() error {
	rootfd, err := backing.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer backing.Close(rootfd)
	if _, err := s.tree.DirIDs().InitRoot(rootfd); err != nil {
		return err
	}
	return nil
}

// ErrNotEmpty: Create was given a directory that has entries.
var ErrNotEmpty = fmt.Errorf("session: directory is not empty: %w", fs.ErrExist)

// checkEmpty requires dir to be an existing, empty directory.
func checkEmpty(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("session: %s: %w", dir, err)
	}
	if len(names) > 0 {
		return fmt.Errorf("%s: %w", dir, ErrNotEmpty)
	}
	return nil
}
