package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// openTree builds the vault's ciphers from an unlocked master key.
func openTree(p config.Params, masterKey []byte, rand io.Reader) (*tree.Tree, error) {
	opts := core.DefaultOptions()
	opts.Rand = rand
	t, err := tree.New(p, masterKey, opts)
	if errors.Is(err, tree.ErrReverse) {
		return nil, withCode(ExitUnsupported, errors.New("this is a reverse-mode vault; it cannot be opened in forward mode"))
	}
	return t, err
}

// initRoot gives a new vault's root directory its random ID.
func initRoot(dir string, p config.Params, masterKey []byte, rand io.Reader) error {
	t, err := openTree(p, masterKey, rand)
	if err != nil {
		return err
	}
	defer t.Wipe()
	rootfd, err := backing.OpenRoot(dir)
	if err != nil {
		return withCode(ExitCipherDir, fmt.Errorf("init: %w", err))
	}
	defer backing.Close(rootfd)
	if _, err := t.InitRoot(rootfd); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	return nil
}

// removeRootDirID undoes initRoot after a later step failed, so the
// directory is empty again and init can be retried.
func removeRootDirID(dir string) {
	os.Remove(filepath.Join(dir, names.DirIDFile))
}

// checkMasterKey tells whether masterKey is this vault's: a wrong key cannot
// decrypt any name in the root directory. checked is false when the root
// has no entry to try (the key could not be checked).
func checkMasterKey(dir string, p config.Params, masterKey []byte) (checked bool, err error) {
	t, err := openTree(p, masterKey, nil)
	if err != nil {
		return false, err
	}
	defer t.Wipe()
	rootfd, err := backing.OpenRoot(dir)
	if err != nil {
		return false, withCode(ExitCipherDir, err)
	}
	defer backing.Close(rootfd)
	dirID, err := t.ReadDirID(rootfd)
	if err != nil {
		return false, err
	}
	ents, bad, err := t.List(rootfd, dirID)
	if err != nil {
		return false, err
	}
	switch {
	case len(ents) > 0:
		return true, nil
	case len(bad) > 0:
		return false, errorfCode(ExitWrongPassword, "wrong master key: no file name in the vault's root decrypts with it")
	}
	return false, nil
}
