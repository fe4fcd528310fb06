package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/spf13/cobra"
)

func newCatCommand(a *App) *cobra.Command {
	cmd := newCommand("cat", "CIPHERDIR PATH...", 2, 1<<20, groupOffline, "print files of a vault without mounting", dirArg, vaultArg)
	fs := cmd.Flags()
	var vf vaultFlags
	vf.register(fs)
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		v, err := a.openVault(pos[0], vf)
		if err != nil {
			return err
		}
		defer v.Close()
		for _, name := range pos[1:] {
			f, err := v.Open(name)
			if err != nil {
				return vaultPathError("cat", pos[0], name, err)
			}
			_, err = copyBuffer(a.Stdout, f)
			f.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	return cmd
}

// vaultPathError says in one sentence why cmd could not use the vault
// path name of the vault in dir, and what to run instead.
func vaultPathError(cmd, dir, name string, err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return reword(err, "%s: %s is a symlink, which %s does not follow (encryptfs ls -l %s %s shows its target)", cmd, name, cmd, dir, name)
	case errors.Is(err, syscall.EISDIR):
		return reword(err, "%s: %s is a directory (encryptfs ls %s %s lists it)", cmd, name, dir, name)
	case errors.Is(err, fs.ErrNotExist):
		return reword(err, "%s: %s does not exist in the vault (encryptfs ls -R %s lists what does)", cmd, name, dir)
	}
	return fmt.Errorf("%s: %s: %w", cmd, name, err)
}
