package cli

func (a *App) cmdCat(args []string) error {
	fs := a.newFlagSet("cat", "CIPHERDIR PATH...")
	var vf vaultFlags
	vf.register(fs)
	pos, err := fs.parse(args, 2, 1<<20)
	if err != nil {
		return helpOK(err)
	}
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
