package cli

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/cobra"
)

// This machine keeps one freshness state directory per vault it mounted
// (fresh.DefaultStateRoot, named by the hex VaultID), which nothing
// removes when a vault is deleted. forget removes one; prune removes those
// not used for a while. Both only list what they would remove unless
// given --yes, and never touch the state of a vault mounted here (its
// lock is held). The seen/ directory beside them (one small file per
// vault, named by an ID only the master key gives) is left alone: it is
// what notices an older encryptfs.conf put back (exit 28).

// newFreshnessForgetCommand is "encryptfs freshness forget CIPHERDIR |
// --vault-id ID [--yes]".
func newFreshnessForgetCommand(a *App) *cobra.Command {
	cmd := newCommand("forget", "[CIPHERDIR]", 0, 1, "", "remove this machine's freshness state of one vault (dry run unless --yes)", dirArg)
	cmd.Long = `remove this machine's freshness state of one vault (dry run unless --yes).

The vault is CIPHERDIR (its encryptfs.conf names its vault ID; no password
is asked) or --vault-id, for a vault that is gone. Without --yes it only
says what it would remove. The next mount of the vault on this machine is
then a first mount: it records the vault as it finds it, so a rollback
from before is no longer caught here.`
	fs := cmd.Flags()
	vaultID := fs.String("vault-id", "", "the vault's `ID` (32 hex digits: the state directory's name, shown by encryptfs info) instead of CIPHERDIR")
	yes := fs.Bool("yes", false, "remove it (without: only say what would be removed)")
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		if (len(pos) == 1) == (*vaultID != "") {
			return usageErrorf("freshness forget: give CIPHERDIR or --vault-id ID (one of them); see encryptfs freshness forget --help")
		}
		id := *vaultID
		if len(pos) == 1 {
			c, err := a.loadConfig(pos[0])
			if err != nil {
				return err
			}
			if len(c.Params.VaultID) == 0 {
				return errorfCode(ExitUnsupported, "freshness forget: %s has no vault ID (a format-1 vault, or one without location binding), so this machine keeps no freshness state for it", pos[0])
			}
			id = hex.EncodeToString(c.Params.VaultID)
		} else if b, err := hex.DecodeString(id); err != nil || len(b) != session.VaultIDSize {
			return usageErrorf("freshness forget: --vault-id %q is not %d hex digits", id, 2*session.VaultIDSize)
		}
		root := session.FreshnessStateRoot()
		dir := filepath.Join(root, id)
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			return errorfCode(ExitError, "freshness forget: this machine has no freshness state for vault %s (nothing in %s)", id, root)
		}
		return removeStateDirs(a, []string{dir}, *yes, "freshness forget")
	}
	return cmd
}

// newFreshnessPruneCommand is "encryptfs freshness prune [--days N] [--yes]".
func newFreshnessPruneCommand(a *App) *cobra.Command {
	cmd := newCommand("prune", "", 0, 0, "", "remove the freshness state of vaults not used on this machine for --days days (dry run unless --yes)")
	cmd.Long = `remove the freshness state of vaults not used on this machine for a while
(dry run unless --yes).

A vault's state directory counts as used when a mount, import, fsck or
freshness status last wrote it. Those not written for --days days (default
180) are listed, and removed with --yes; the state of a vault mounted here
is never removed. A vault pruned by mistake loses nothing but this
machine's memory of it: its next mount here is a first mount.`
	fs := cmd.Flags()
	days := fs.Int("days", 180, "remove state not used for this many `DAYS`")
	yes := fs.Bool("yes", false, "remove them (without: only list them)")
	cmd.RunE = func(_ *cobra.Command, _ []string) error {
		if *days < 1 {
			return usageErrorf("freshness prune: --days must be at least 1")
		}
		root := session.FreshnessStateRoot()
		ents, err := os.ReadDir(root)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(a.Stdout, "no freshness state on this machine (%s does not exist)\n", root)
			return nil
		}
		if err != nil {
			return fmt.Errorf("freshness prune: %w", err)
		}
		cutoff := time.Now().Add(-time.Duration(*days) * 24 * time.Hour)
		var old []string
		for _, e := range ents {
			b, err := hex.DecodeString(e.Name())
			if err != nil || len(b) != session.VaultIDSize || !e.IsDir() {
				continue // seen/, or not a vault's state
			}
			dir := filepath.Join(root, e.Name())
			if lastUsed(dir).Before(cutoff) {
				old = append(old, dir)
			}
		}
		sort.Strings(old)
		if len(old) == 0 {
			fmt.Fprintf(a.Stdout, "nothing to prune: every vault's state in %s was used in the last %s\n", root, plural(*days, "day"))
			return nil
		}
		return removeStateDirs(a, old, *yes, "freshness prune")
	}
	return cmd
}

// lastUsed is the newest modification time of dir and the files in it.
func lastUsed(dir string) time.Time {
	var t time.Time
	if fi, err := os.Stat(dir); err == nil {
		t = fi.ModTime()
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t
}

// removeStateDirs removes the state directories dirs (or, without yes,
// says it would), skipping one whose lock a mount holds.
func removeStateDirs(a *App, dirs []string, yes bool, cmd string) error {
	busy := 0
	for _, dir := range dirs {
		when := lastUsed(dir).Format("2006-01-02")
		switch {
		case !session.WaitFreshnessUnlocked(dir, 0):
			busy++
			fmt.Fprintf(a.Stdout, "kept %s: the vault is mounted on this machine\n", dir)
		case !yes:
			fmt.Fprintf(a.Stdout, "would remove %s (last used %s)\n", dir, when)
		default:
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("%s: %w", cmd, err)
			}
			fmt.Fprintf(a.Stdout, "removed %s (last used %s)\n", dir, when)
		}
	}
	if !yes && busy < len(dirs) {
		fmt.Fprintf(a.Stdout, "dry run: nothing removed; run %s again with --yes to remove\n", cmd)
	}
	if busy > 0 && len(dirs) == 1 {
		return errorfCode(ExitError, "%s: the vault is mounted on this machine; unmount it first", cmd)
	}
	return nil
}
