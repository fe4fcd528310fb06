package cli

import (
	"fmt"
	"path/filepath"
	"strings"
)

func (a *App) cmdEncryptPath(args []string) error {
	fs := a.newFlagSet("encrypt-path", "CIPHERDIR PATH")
	var vf vaultFlags
	vf.register(fs)
	pos, err := fs.parse(args, 2, 2)
	if err != nil {
		return helpOK(err)
	}
	v, err := a.openVault(pos[0], vf)
	if err != nil {
		return err
	}
	defer v.Close()
	enc, err := v.EncryptPath(pos[1])
	if err != nil {
		return err
	}
	fmt.Fprintln(a.Stdout, enc)
	return nil
}

func (a *App) cmdDecryptPath(args []string) error {
	fs := a.newFlagSet("decrypt-path", "CIPHERDIR BACKINGPATH")
	var vf vaultFlags
	vf.register(fs)
	pos, err := fs.parse(args, 2, 2)
	if err != nil {
		return helpOK(err)
	}
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
