package cli

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/config"
	revfs "github.com/encryptfs/encryptfs/internal/fs/reverse"
)

func (a *App) cmdPasswd(args []string) error {
	fs := a.newFlagSet("passwd", "CIPHERDIR")
	var oldSrc, newSrc passSource
	fs.StringVar(&oldSrc.passfile, "passfile", "", "read the current password from the first line of this file")
	fs.StringVar(&oldSrc.extpass, "extpass", "", "run this program for the current password")
	fs.StringVar(&newSrc.passfile, "new-passfile", "", "read the new password from the first line of this file")
	fs.StringVar(&newSrc.extpass, "new-extpass", "", "run this program for the new password")
	useMasterKey := fs.Bool("masterkey", false, "read the master key from stdin instead of the current password (forgotten password)")
	reverse := fs.Bool("reverse", false, "change the password of a PLAINDIR's reverse-mode config (found without the flag too)")
	var kf kdfFlags
	kf.register(fs)
	pos, err := fs.parse(args, 1, 1)
	if err != nil {
		return helpOK(err)
	}
	dir := pos[0]
	c, isReverse, err := a.loadAnyConfig(dir, *reverse)
	if err != nil {
		return err
	}
	k, err := kf.params(a.Rand, c.Params.KDF)
	if err != nil {
		return err
	}

	var masterKey []byte
	if *useMasterKey {
		if oldSrc != (passSource{}) {
			return usageErrorf("passwd: --masterkey replaces the current password; drop --passfile/--extpass")
		}
		if masterKey, err = a.readMasterKey(); err != nil {
			return err
		}
		defer clear(masterKey)
		if isReverse { // a PLAINDIR has no encrypted names to check against
			fmt.Fprintln(a.Stderr, "encryptfs: warning: in reverse mode the master key cannot be checked; a wrong one makes new copies of the view unreadable with the old key")
		} else if checked, err := checkMasterKey(dir, c.Params, masterKey); err != nil {
			return err
		} else if !checked {
			fmt.Fprintln(a.Stderr, "encryptfs: warning: the vault has no entries, so the master key could not be checked against it")
		}
	} else {
		old, err := a.readPassword(oldSrc, "Current password", false)
		if err != nil {
			return err
		}
		masterKey, err = c.Unlock(old)
		clear(old)
		if err != nil {
			return err
		}
		defer clear(masterKey)
	}

	pw, err := a.readPassword(newSrc, "New password", true)
	if err != nil {
		return err
	}
	defer clear(pw)
	if err := c.Rewrap(masterKey, pw, k, a.Rand); err != nil {
		return err
	}
	if isReverse {
		return a.saveReverseConfig(dir, c)
	}
	if err := config.Backup(dir); err != nil {
		return err
	}
	if err := c.Save(dir); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Password changed. The previous config is kept as %s.\n", config.BackupName)
	return nil
}

// saveReverseConfig writes PLAINDIR's re-wrapped reverse config. There is
// no backup: a ".bak" next to it would show up in the encrypted view, and
// every copy of the view made before holds the previous config as its
// encryptfs.conf anyway.
func (a *App) saveReverseConfig(dir string, c *config.Config) error {
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	if err := config.WriteFileAtomic(dir, revfs.ConfigName, data); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Password changed. Views mounted from now on (and copies of them) use it; a mounted view keeps the old config until remounted.\n")
	return nil
}
