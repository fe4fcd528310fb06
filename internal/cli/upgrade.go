package cli

import (
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/cobra"
)

func (a *App) newUpgradeCommand() *cobra.Command {
	cmd := newCommand("upgrade", "CIPHERDIR", 1, 1, groupVault, "turn a format-1 vault into format 2 (key slots), in place", dirArg)
	fs := cmd.Flags()
	var src passSource
	passSourceFlags(fs, &src, "password")
	var kf kdfFlags
	kf.register(fs)
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		return a.upgrade(pos[0], src, kf)
	}
	return cmd
}

// upgrade rewrites a format-1 config as format 2 (session.Upgrade): the
// same master key, so no file changes and a mount keeps running; the
// password becomes key slot 1. Already format 2 is not an error (exit 0),
// so that scripts can run it twice.
func (a *App) upgrade(dir string, src passSource, kf kdfFlags) error {
	c, err := a.loadConfig(dir)
	if errors.Is(err, config.ErrNotFound) {
		if _, rerr := a.loadReverseConfig(dir); rerr == nil {
			return errorfCode(ExitUnsupported, "upgrade: %s is set up for reverse mode, whose config stays format 1 (a copy of the view must open as the format-1 vault it shows)", dir)
		}
	}
	if err != nil {
		return err
	}
	if c.IsV2() {
		fmt.Fprintf(a.Stdout, "%s is already format 2 (key slots); nothing to do.\n", dir)
		return nil
	}
	if c.Params.Reverse {
		return withCode(ExitUnsupported, fmt.Errorf("upgrade: %w", config.ErrReverseV2))
	}
	// As passwd: each cost not given as a flag keeps the stored one but is
	// raised to at least the default.
	k, err := kf.params(a.Rand, costsOf(c.Params.KDF).atLeast(a.defaultKDF()))
	if err != nil {
		return err
	}
	if err := c.CheckKDFMemory(k.MemoryKiB); err != nil {
		return fmt.Errorf("upgrade: the new password slot: %w (choose a smaller --kdf-memory)", err)
	}
	pw, err := a.readPassword(src, "Password", false)
	if err != nil {
		return err
	}
	defer clear(pw)
	if err := session.Upgrade(dir, pw, k, session.Options{Config: c, Rand: a.Rand}); err != nil {
		if errors.Is(err, config.ErrWrongPassword) {
			return err
		}
		return fmt.Errorf("upgrade: %w", err)
	}
	fmt.Fprintf(a.Stdout, "Upgraded %s to format 2: key slot 1 (password, Argon2id t=%d m=%d MiB p=%d) opens it with the same password.\n",
		dir, k.Time, k.MemoryKiB/1024, k.Threads)
	fmt.Fprintf(a.Stdout, "The master key and every file are unchanged (a running mount keeps working); the master key on paper still opens it (--masterkey).\n")
	fmt.Fprintf(a.Stdout, "Add keys with: encryptfs key add %s (--recipient, --new-keyfile, --recovery)\n", dir)
	return nil
}
