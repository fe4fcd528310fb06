package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/encryptfs/encryptfs/internal/serve"
	"github.com/spf13/cobra"
)

func newServeAddUserCommand(a *App) *cobra.Command {
	cmd := newCommand("adduser", "FILE NAME", 2, 2, "", "add NAME to the users file FILE of serve webdav --users (or change its password)", fileArg)
	var src passSource
	passSourceFlags(cmd.Flags(), &src, "user's password")
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		file, name := pos[0], pos[1]
		if err := serve.CheckUserName(name); err != nil {
			return withCode(ExitUsage, err)
		}
		old, err := readSmallFile(file, serve.MaxUsersFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		pw, err := a.readPassword(src, "Password for "+name, true)
		if err != nil {
			return err
		}
		defer clear(pw)
		line, err := serve.HashLine(a.Rand, name, pw)
		if err != nil {
			return err
		}
		data := serve.SetUser(old, name, line)
		if _, err := serve.ParseUsers(data, a.Rand); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if err := writePrivateFile(file, data); err != nil {
			return err
		}
		fmt.Fprintf(a.Stderr, "encryptfs: %s: user %s set\n", file, name)
		return nil
	}
	return cmd
}

// writePrivateFile replaces path with data (mode 0600) atomically: a
// temporary file beside it, synced, then renamed over it.
func writePrivateFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
