package cli

import (
	"fmt"
	"github.com/spf13/cobra"
	"os"
	"path/filepath"
	"strings"

	"github.com/encryptfs/encryptfs/internal/session"
)

func newPasswdCommand(a *App) *cobra.Command {
	cmd := newCommand("passwd", "CIPHERDIR", 1, 1, groupVault, "change a vault's password", dirArg)
	fs := cmd.Flags()
	var u unlockFlags
	var newSrc passSource
	u.register(fs, "current password")
	fs.Lookup("recovery-key").Usage = "a forgotten password: unlock with the recovery key (format 1: the master key), asked for on the terminal or read from stdin, instead of the current password"
	slot := fs.Int("slot", 0, "format 2: set the password of password slot `ID` (after unlocking with any credential; default: the slot the current password opens)")
	flagGroup(fs, groupUnlock, "slot")
	fs.StringVar(&newSrc.passfile, "new-passfile", "", "read the new password from the first line of `FILE`")
	fs.StringVar(&newSrc.extpass, "new-extpass", "", "run `CMD` (split on spaces, no shell) and use its first output line as the new password")
	mustMark(cobra.MarkFlagFilename(fs, "new-passfile"))
	flagGroup(fs, groupUnlock, "new-passfile", "new-extpass")
	revoke := fs.Bool("revoke", false, revokeFlagUsage)
	backup := fs.String("backup", "", "keep the previous config as this new `FILE` (outside CIPHERDIR; it still opens with the old password)")
	mustMark(cobra.MarkFlagFilename(fs, "backup"))
	reverse := fs.Bool("reverse", false, "change the password of a PLAINDIR's reverse-mode config (found without the flag too)")
	flagGroup(fs, groupReverse, "reverse")
	var kf kdfFlags
	kf.register(fs)
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		dir := pos[0]
		c, isReverse, err := a.loadAnyConfig(dir, *reverse)
		if err != nil {
			return err
		}
		if *backup != "" {
			if err := checkBackupPath(dir, *backup); err != nil {
				return err
			}
		}
		if !isReverse && c.IsV2() {
			return passwdV2(a, dir, c, u, newSrc, kf, *slot, *backup, *revoke)
		}
		if *revoke {
			return errorfCode(ExitUnsupported, "passwd --revoke: a format-1 vault has one key and no key epochs; nothing was changed")
		}
		if *slot != 0 {
			return usageErrorf("passwd: --slot is for format-2 vaults; this one has one password")
		}
		if len(u.keyfiles) > 0 || len(u.identities) > 0 || len(u.credentials) > 0 {
			return errorfCode(ExitUnsupported, "passwd: a format-1 vault opens only with its password or master key (encryptfs upgrade adds key slots)")
		}
		useMasterKey, oldSrc := u.masterKey, u.src
		// A cost not given as a flag keeps the stored one but never drops below
		// the default: with --masterkey the stored costs are unauthenticated (an
		// attacker may have lowered them to the floor, and re-wrapping would
		// authenticate them), and without it an old cheap vault is upgraded.
		k, err := kf.params(a.Rand, costsOf(c.Params.KDF).atLeast(a.defaultKDF()))
		if err != nil {
			return err
		}
		// A new config this machine could not unlock is refused before any
		// secret is asked for (Rewrap would refuse it too).
		if err := c.CheckKDFMemory(k.MemoryKiB); err != nil {
			return fmt.Errorf("passwd: the new config: %w (choose a smaller --kdf-memory)", err)
		}

		var masterKey []byte
		if useMasterKey {
			if oldSrc != (passSource{}) {
				return usageErrorf("passwd: --recovery-key replaces the current password; drop --passfile/--extpass")
			}
			if masterKey, err = a.readMasterKey("master key"); err != nil {
				return err
			}
			defer clear(masterKey)
			if isReverse { // a PLAINDIR has no encrypted names to check against
				fmt.Fprintln(a.Stderr, "encryptfs: warning: in reverse mode the master key cannot be checked; a wrong one makes new copies of the view unreadable with the old key")
			} else if checked, err := checkVaultMasterKey(dir, c, masterKey); err != nil {
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
		if err := session.RewrapConfig(dir, c, isReverse, masterKey, pw, k, *backup, a.Rand); err != nil {
			return err
		}
		if isReverse {
			// Only a --backup outside PLAINDIR is written (a ".bak" next
			// to it would show up in the encrypted view), and every copy of
			// the view made before holds the previous config as its
			// encryptfs.conf anyway.
			fmt.Fprintf(a.Stdout, "Password changed. Views mounted from now on (and copies of them) use it; a mounted view keeps the old config until remounted.\n")
		} else {
			fmt.Fprintln(a.Stdout, "Password changed.")
		}
		noteBackup(a, *backup)
		return nil
	}
	return cmd
}

// checkVaultMasterKey opens the forward vault in dir (config c) with
// masterKey only to check the key against the vault's root names.
func checkVaultMasterKey(dir string, c *session.Config, masterKey []byte) (checked bool, err error) {
	s, err := openSession(dir, c, masterKey, true, session.Options{FreshnessUse: session.FreshnessOff, SeenDir: seenDir("")})
	if err != nil {
		return false, err
	}
	defer s.Close()
	return checkMasterKey(s)
}

// noteBackup reminds the user what the backup passwd wrote is.
func noteBackup(a *App, path string) {
	if path != "" {
		fmt.Fprintf(a.Stdout, "The previous config is kept as %s; it still opens the vault with the old password, so keep it offline or delete it.\n", path)
	}
}

// checkBackupPath refuses a --backup file inside dir (CIPHERDIR, or a
// PLAINDIR in reverse mode): a copy of the old config in a synced directory
// keeps the old password working for anyone who gets it (and in reverse
// mode it would show up in the encrypted view). The file must not exist.
func checkBackupPath(dir, backup string) error {
	absDir, err := resolvedAbs(dir)
	if err != nil {
		return withCode(ExitCipherDir, err)
	}
	parent, err := resolvedAbs(filepath.Dir(backup))
	if err != nil {
		return usageErrorf("passwd: --backup: %v", err)
	}
	if rel, err := filepath.Rel(absDir, parent); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return usageErrorf("passwd: --backup %s is inside %s; keep the old config outside the vault directory", backup, dir)
	}
	if _, err := os.Lstat(backup); err == nil {
		return usageErrorf("passwd: --backup %s already exists", backup)
	}
	return nil
}

// resolvedAbs is path made absolute with every symlink resolved.
func resolvedAbs(path string) (string, error) {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}
