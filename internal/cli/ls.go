package cli

import (
	"errors"
	"fmt"
	"github.com/spf13/cobra"
	"io/fs"
	"path"

	"github.com/encryptfs/encryptfs/vault"
)

func newLsCommand(a *App) *cobra.Command {
	cmd := newCommand("ls", "CIPHERDIR [PATH]", 1, 2, groupOffline, "list a vault's directory without mounting", dirArg, vaultArg)
	fs := cmd.Flags()
	long := fs.BoolP("long", "l", false, "long format: mode, size, modification time, symlink target")
	recursive := fs.BoolP("recursive", "R", false, "list subdirectories too (full paths)")
	flagGroup(fs, groupOutput, "long", "recursive")
	var vf vaultFlags
	vf.register(fs)
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		dir := ""
		if len(pos) == 2 {
			dir = pos[1]
		}
		v, err := a.openVault(pos[0], vf)
		if err != nil {
			return err
		}
		defer v.Close()
		p := &problems{a: a, cmd: "ls"}
		fi, err := v.Stat(dir)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			printEntry(a, v, dir, dir, fi, *long)
			return nil
		}
		listDir(a, v, dir, *long, *recursive, p)
		return p.result()
	}
	return cmd
}

func listDir(a *App, v *vault.Vault, dir string, long, recursive bool, p *problems) {
	ents, err := v.ReadDir(dir)
	var bad *vault.BadEntriesError
	if errors.As(err, &bad) {
		for _, b := range bad.Backing {
			p.report(path.Join(dir, b), fmt.Errorf("backing entry does not decrypt (foreign, conflict copy or tampered): %w", vault.ErrCorrupt))
		}
		for _, f := range bad.Failed {
			p.report(path.Join(dir, f.Name), f.Err)
		}
	} else if err != nil {
		p.report(dir, err)
		return
	}
	for _, e := range ents {
		full := path.Join(dir, e.Name())
		shown := e.Name()
		if recursive {
			shown = full
		}
		fi, _ := e.Info()
		printEntry(a, v, shown, full, fi, long)
	}
	if recursive {
		for _, e := range ents {
			if e.IsDir() {
				listDir(a, v, path.Join(dir, e.Name()), long, recursive, p)
			}
		}
	}
}

// printEntry prints shown (escaped for display: displayName); full is its
// path in the vault.
func printEntry(a *App, v *vault.Vault, shown, full string, fi fs.FileInfo, long bool) {
	if !long {
		fmt.Fprintln(a.Stdout, displayName(shown))
		return
	}
	line := fmt.Sprintf("%s %12d %s %s", unixMode(fi.Mode()), fi.Size(), fi.ModTime().Format("2006-01-02 15:04"), displayName(shown))
	if fi.Mode()&fs.ModeSymlink != 0 {
		if target, err := v.Readlink(full); err == nil {
			line += " -> " + displayName(target)
		}
	}
	fmt.Fprintln(a.Stdout, line)
}

// unixMode renders a mode the way ls(1) does (lrwxrwxrwx, crw-..., drwsr-sr-t),
// not Go's FileMode.String (Lrwxrwxrwx, Dcrw-...).
func unixMode(m fs.FileMode) string {
	typ := byte('-')
	switch {
	case m.IsDir():
		typ = 'd'
	case m&fs.ModeSymlink != 0:
		typ = 'l'
	case m&fs.ModeNamedPipe != 0:
		typ = 'p'
	case m&fs.ModeSocket != 0:
		typ = 's'
	case m&fs.ModeCharDevice != 0:
		typ = 'c'
	case m&fs.ModeDevice != 0:
		typ = 'b'
	}
	b := []byte{typ}
	const rwx = "rwxrwxrwx"
	for i := range 9 {
		if m&(1<<(8-i)) != 0 {
			b = append(b, rwx[i])
		} else {
			b = append(b, '-')
		}
	}
	special := func(set bool, pos int, lower, upper byte) {
		if !set {
			return
		}
		if b[pos] == '-' {
			b[pos] = upper
		} else {
			b[pos] = lower
		}
	}
	special(m&fs.ModeSetuid != 0, 3, 's', 'S')
	special(m&fs.ModeSetgid != 0, 6, 's', 'S')
	special(m&fs.ModeSticky != 0, 9, 't', 'T')
	return string(b)
}
