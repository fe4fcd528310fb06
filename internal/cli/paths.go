package cli

import (
	"errors"
	"fmt"
	"github.com/spf13/cobra"
	"os"
	"path/filepath"
	"strings"
)

func newEncryptPathCommand(a *App) *cobra.Command {
	cmd := newCommand("encrypt-path", "CIPHERDIR PATH", 2, 2, groupOffline, "print the backing path of a plaintext path", dirArg, vaultArg)
	fs := cmd.Flags()
	var vf vaultFlags
	vf.register(fs)
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		v, err := a.openVault(pos[0], vf)
		if err != nil {
			return err
		}
		defer v.Close()
		enc, err := v.EncryptPath(pos[1])
		if errors.Is(err, os.ErrNotExist) {
			return reword(err, "encrypt-path: a directory of %s does not exist in the vault (encryptfs ls -R %s lists what does)", pos[1], pos[0])
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(a.Stdout, enc)
		return nil
	}
	return cmd
}

func newDecryptPathCommand(a *App) *cobra.Command {
	cmd := newCommand("decrypt-path", "CIPHERDIR BACKINGPATH", 2, 2, groupOffline, "print the plaintext path of a backing path", dirArg, vaultArg)
	fs := cmd.Flags()
	var vf vaultFlags
	vf.register(fs)
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		rel := pos[1]
		// Accept a path inside CIPHERDIR as well as one relative to it.
		if abs, err := filepath.Abs(pos[0]); err == nil && strings.HasPrefix(rel, abs+"/") {
			rel = strings.TrimPrefix(rel, abs+"/")
		}
		v, err := a.openVault(pos[0], vf)
		if err != nil {
			return err
		}
		defer v.Close()
		plain, err := v.DecryptPath(rel)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.Stdout, displayName(plain))
		return nil
	}
	return cmd
}
