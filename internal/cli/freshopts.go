package cli

import (
	"fmt"
	"log"
	"path/filepath"
	"strings"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Freshness (format 2 feature flag "Freshness", docs/format.md §15) in
// the commands: who records, who checks. Every command that may write
// the vault's tree records (a change no device recorded looks like a
// rollback to the clients that saw the records): the forward mount,
// import and fsck --repair. fsck checks; freshness status|accept checks
// or accepts. The read-only commands (ls, cat, export, decrypt-path,
// encrypt-path, info) and those that change only the config skip it:
// a check walks the whole vault, which they need not pay for.

// registerStateDir adds --state-dir, this machine's freshness state of
// the vault, to fs.
func registerStateDir(fs *pflag.FlagSet, dir *string) {
	fs.StringVar(dir, "state-dir", "", "this machine's freshness state of the vault (`DIR`); default $XDG_STATE_HOME/encryptfs/VAULTID, else ~/.local/state/encryptfs/VAULTID, else /var/lib/encryptfs/VAULTID")
	mustMark(cobra.MarkFlagDirname(fs, "state-dir"))
}

// freshOptions are the session options of a command that uses freshness
// of the vault in dir (config c) as use says, with the state directory stateDir ("": the default) and
// the freshness log logger (nil: none).
func (a *App) freshOptions(dir string, c *config.Config, use session.FreshnessUse, stateDir string, logger *log.Logger) session.Options {
	if stateDir != "" {
		// The daemon child may run elsewhere; an absolute path names
		// one directory for both.
		if abs, err := filepath.Abs(stateDir); err == nil {
			stateDir = abs
		}
	}
	if use != session.FreshnessOff && hasFreshness(c) && mountedAt(dir) == "" {
		// Right after an unmount the daemon may still write its last
		// batch, holding the state: a writer would be refused
		// (fresh.ErrLocked), a check would see it half done. Wait for
		// it, briefly. (The VaultID read here is not authenticated yet:
		// it only chooses what to wait for.)
		fresh.WaitUnlocked(session.FreshnessStateDir(stateDir, c.Params), stateLockWait)
	}
	o := session.Options{Config: c, Rand: a.Rand, FreshnessUse: use, FreshnessStateDir: stateDir}
	if logger != nil {
		o.FreshnessLog = freshLog(dir, func(s string) { logger.Print(s) })
	}
	return o
}

// freshLog turns freshness's start-up report into one line (the mount
// log, a writing command's stderr): what it found and where to look.
// Other lines (batch errors, the note after an unclean end) pass as
// they are.
func freshLog(dir string, logf func(string)) func(string) {
	if logf == nil {
		return nil
	}
	return func(msg string) {
		first, rest, _ := strings.Cut(msg, "\n")
		var status string
		switch first {
		case "freshness: behind":
			status = "is behind (a sync in flight could explain it)"
		case "freshness: rolled back":
			status = "was rolled back (something went back or was deleted)"
		default:
			logf(msg)
			return
		}
		n := strings.Count(rest, "\n") + 1
		if rest == "" {
			n = 0
		}
		logf(fmt.Sprintf("freshness: %s %s: %d issue(s); see encryptfs freshness status %s", dir, status, n, dir))
	}
}

// hasFreshness reports whether the vault of config c records freshness.
func hasFreshness(c *config.Config) bool { return c.Params.Has(config.FlagFreshness) }
