package cli

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/cobra"
)

// Exit codes of encryptfs freshness status (docs/cli.md): the check ran
// and found the vault behind (a sync in flight could explain it), or
// rolled back (something went back or was deleted).
const (
	ExitFreshBehind     = 27
	ExitFreshRolledBack = 28
)

// stateLockWait bounds how long status and accept wait for a mount that
// is ending to let go of this machine's state.
const stateLockWait = 10 * time.Second

// newFreshnessCommand is encryptfs freshness status|accept: rollback and
// deletion detection offline (format v2 "Freshness", docs/format.md §15).
func newFreshnessCommand(a *App) *cobra.Command {
	cmd := newCommand("freshness", "", 0, 0, groupOffline, "check a vault for rollback and deletion (status), accept its state (accept), remove this machine's state of old vaults (forget, prune)")
	cmd.AddCommand(newFreshnessSubcommand(a, "status", "report whether anything went back since this machine last saw the vault: OK, behind (a sync in flight could explain it) or rolled back, with the list"))
	cmd.AddCommand(newFreshnessSubcommand(a, "accept", "show what went back, then record the vault as it is now as seen (after a restore from a backup, say)"))
	cmd.AddCommand(newFreshnessForgetCommand(a))
	cmd.AddCommand(newFreshnessPruneCommand(a))
	return cmd
}

func newFreshnessSubcommand(a *App, name, short string) *cobra.Command {
	cmd := newCommand(name, "CIPHERDIR", 1, 1, "", short, dirArg)
	fs := cmd.Flags()
	var u unlockFlags
	u.register(fs, "password")
	stateDir := new(string)
	registerStateDir(fs, stateDir)
	grace := fs.Duration("grace", session.DefaultFreshnessGrace, "how long a behind state may last before it counts as rolled back")
	flagGroup(fs, "Freshness", "state-dir", "grace")
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		dir, err := filepath.Abs(pos[0])
		if err != nil {
			return withCode(ExitUsage, err)
		}
		if *grace <= 0 {
			return usageErrorf("freshness: --grace must be positive")
		}
		if u.masterKey {
			return usageErrorf("freshness: --recovery-key is not supported here yet; use a password or another key slot")
		}
		c, err := a.loadConfig(dir)
		if err != nil {
			return err
		}
		// The config itself first: this machine's memory of the vault
		// (docs/format.md §15a) tells a config put back from before an
		// upgrade or a revoke, also one without freshness at all.
		use := session.SeenReport
		if name == "accept" {
			use = session.SeenAccept
		}
		s, err := a.unlockVaultWith(dir, c, u, "Password", session.Options{Config: c, Rand: a.Rand,
			FreshnessUse: session.FreshnessOff, SeenDir: seenDir(*stateDir), SeenUse: use})
		if err != nil {
			return err
		}
		back := s.ConfigBack()
		master := s.MasterKey()
		params := s.Params()
		s.Close()
		for _, b := range back {
			fmt.Fprintf(a.Stdout, "rolled back: encryptfs.conf: %s\n", b)
		}
		if !hasFreshness(c) {
			clear(master)
			switch {
			case name == "accept":
				fmt.Fprintf(a.Stdout, "freshness: recorded the config of %s as seen by this machine\n", dir)
				return nil
			case len(back) > 0:
				return errorfCode(ExitFreshRolledBack, "freshness: %s was rolled back: its encryptfs.conf is older than one this machine opened it with (encryptfs freshness accept takes it)", dir)
			}
			return errorfCode(ExitUnsupported, "freshness: %s has no freshness (format %d without the feature flag %s): nothing records or checks rollback; encryptfs upgrade adds it", dir, c.Params.FormatVersion, session.FlagFreshness)
		}
		if master == nil {
			return fmt.Errorf("freshness: %s: the session kept no master key", dir)
		}
		defer clear(master)
		// The default state directory comes from the VaultID of the
		// config the unlock authenticated (its MAC under the master
		// key): an attacker who writes CIPHERDIR cannot choose the state
		// that checks the vault.
		state, err := filepath.Abs(session.FreshnessStateDir(*stateDir, params))
		if err != nil {
			return withCode(ExitUsage, err)
		}
		if mountedAt(dir) == "" {
			// Right after an unmount the daemon may still write its
			// last batch (and hold the state): wait for it, briefly.
			session.WaitFreshnessUnlocked(state, stateLockWait)
		}
		// The session opens the vault with the master key, so that the
		// config's epoch keys (§3b) come with it (session.OpenFreshnessCheck).
		fs, err := session.OpenFreshnessCheck(dir, master, c, session.FreshnessCheckOptions{StateDir: state, VaultID: params.VaultID, Grace: *grace})
		if err != nil {
			return err
		}
		defer fs.Close()
		err = runFreshness(a, name, dir, fs)
		if len(back) > 0 && name == "status" && ExitCode(err) != ExitFreshRolledBack {
			return errorfCode(ExitFreshRolledBack, "freshness: %s was rolled back: its encryptfs.conf is older than one this machine opened it with (encryptfs freshness accept takes it)", dir)
		}
		return err
	}
	return cmd
}

// runFreshness runs status or accept and prints the report on stdout.
func runFreshness(a *App, name, dir string, s *session.Session) error {
	fv := s.Freshness()
	if name == "accept" {
		rep, err := fv.Accept()
		if err != nil {
			return err
		}
		fmt.Fprintln(a.Stdout, rep.String())
		fmt.Fprintf(a.Stdout, "freshness: recorded %s as seen by this machine (device %s)\n", dir, fv.Device())
		return nil
	}
	rep, err := fv.Check()
	if err != nil {
		return err
	}
	if rep.NothingRecorded() {
		fmt.Fprintf(a.Stdout, "freshness: nothing recorded yet: no device has mounted %s since freshness was turned on; its first mount (or import) records it\n", dir)
		return nil
	}
	fmt.Fprintln(a.Stdout, rep.String())
	switch rep.Status {
	case session.FreshBehind:
		return errorfCode(ExitFreshBehind, "freshness: %s is behind: %d issue(s), a sync in flight could explain them", dir, len(rep.Issues))
	case session.FreshRolledBack:
		return errorfCode(ExitFreshRolledBack, "freshness: %s was rolled back: %d issue(s) (encryptfs freshness accept records this state as seen)", dir, len(rep.Issues))
	}
	return nil
}
