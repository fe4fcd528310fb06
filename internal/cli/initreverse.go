package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/encryptfs/encryptfs/internal/session"
)

// reverseCipher checks init's --cipher for reverse mode, which always uses
// aes-256-siv: derived nonces repeat for identical chunks, and only SIV
// stays secure then. cipherSet is whether --cipher was given at all.
func reverseCipher(cipherName string, cipherSet bool) error {
	if !cipherSet || cipherName == "siv" || cipherName == string(session.AES256SIV) {
		return nil
	}
	return usageErrorf("init: --reverse always uses %s (derived nonces need a misuse-resistant cipher); drop --cipher %s", session.AES256SIV, cipherName)
}

// initReverse prepares the existing plaintext directory dir for reverse
// mounts: it writes dir/.encryptfs.reverse.conf (parameters p, aes-256-siv)
// wrapping a new master key under a new password, and shows the master key
// once. Nothing else in dir is touched.
func initReverse(a *App, dir string, p session.Params, src passSource) error {
	if err := checkDir(dir, ExitCipherDir, "PLAINDIR"); err != nil {
		return err
	}
	for _, name := range []string{session.ReverseConfigFileName, session.ConfigFileName} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return errorfCode(ExitCipherDir, "init: %s already has %s; it is already set up (or is a vault)", dir, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return withCode(ExitCipherDir, fmt.Errorf("init: %w", err))
		}
	}
	c, masterKey, err := newConfig(a, p, src)
	if err != nil {
		return err
	}
	defer clear(masterKey)
	if err := session.SaveReverseConfig(dir, c); err != nil {
		return withCode(ExitCipherDir, fmt.Errorf("init: %w", err))
	}
	fmt.Fprintf(a.Stdout, "Created reverse config %s (%s).\n", filepath.Join(dir, session.ReverseConfigFileName), describeParams(p))
	printMasterKey(a.Stdout, masterKey)
	fmt.Fprintf(a.Stdout, "Mount the encrypted view with: encryptfs mount --reverse %s MOUNTPOINT\n", dir)
	return nil
}

// cmdInitReverse is init --reverse: the cipher is always aes-256-siv.
func cmdInitReverse(a *App, dir, cipherName string, cipherSet bool, chunk string, kf kdfFlags, src passSource) error {
	if err := reverseCipher(cipherName, cipherSet); err != nil {
		return err
	}
	// Params.Reverse stays false: the view shows this config's exact bytes
	// as the copy's encryptfs.conf (they are the key wrap's associated
	// data, so they cannot be edited), and forward mode refuses
	// Reverse=true. The file name marks the directory as reverse.
	p, err := vaultParams(a, session.AES256SIV, chunk, kf)
	if err != nil {
		return err
	}
	return initReverse(a, dir, p, src)
}
