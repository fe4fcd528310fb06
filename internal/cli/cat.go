package cli

import "github.com/spf13/cobra"

func (a *App) newCatCommand() *cobra.Command {
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
				return err
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
