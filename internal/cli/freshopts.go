package cli

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

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
// of the vault in dir (config c) as use says, with the state directory
// stateDir ("": the default) and the freshness log logger (nil: none).
func (a *App) freshOptions(dir string, c *session.Config, use session.FreshnessUse, stateDir string, logger *log.Logger) session.Options {
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
		// (session.ErrFreshnessLocked), a check would see it half done.
		// Wait for it, briefly. (The VaultID read here is not
		// authenticated yet: it only chooses what to wait for.)
		session.WaitFreshnessUnlocked(session.FreshnessStateDir(stateDir, c.Params), stateLockWait)
	}
	o := session.Options{Config: c, Rand: a.Rand, FreshnessUse: use, FreshnessStateDir: stateDir, SeenDir: seenDir(stateDir)}
	if logger != nil {
		o.FreshnessLog = freshLog(dir, func(s string) { logger.Print(s) })
	}
	return o
}

// seenDir is where this machine remembers the configs it opened vaults
// with (session.Options.SeenDir, docs/format.md §15a): beside the vaults'
// freshness state, or in the state directory --state-dir names.
func seenDir(stateDir string) string {
	if stateDir != "" {
		if abs, err := filepath.Abs(stateDir); err == nil {
			stateDir = abs
		}
		return filepath.Join(stateDir, "seen")
	}
	return filepath.Join(session.FreshnessStateRoot(), "seen")
}

// mountSessionOptions are freshOptions for a mount with flags m.
func mountSessionOptions(a *App, dir string, c *session.Config, m mountFlags, use session.FreshnessUse, logger *log.Logger) session.Options {
	o := a.freshOptions(dir, c, use, m.stateDir, logger)
	o.FreshnessStrict = m.freshness == "strict"
	return o
}

// checkFreshnessMode refuses a --freshness / -o freshness= value other
// than warn and strict.
func checkFreshnessMode(m mountFlags) error {
	switch m.freshness {
	case "", "warn", "strict":
		return nil
	}
	return usageErrorf("mount: --freshness %q: want warn or strict", m.freshness)
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
func hasFreshness(c *session.Config) bool { return c.Params.Has(session.FlagFreshness) }

// mountFreshness is what a forward mount does with freshness: it records;
// a read-only mount cannot (nothing reaches CIPHERDIR), so it checks once
// at start (mountChecked) and holds the state until unmounted.
func mountFreshness(m mountFlags) session.FreshnessUse {
	if m.readOnly {
		return session.FreshnessCheck
	}
	return session.FreshnessRecord
}

// mountChecked logs what a read-only mount's check at start finds, as a
// recording mount's start does (one line, freshLog).
// With --freshness strict a read-only mount refuses a vault that went
// back, as a recording one does (session.ErrRolledBack).
func mountChecked(s *session.Session, dir string, m mountFlags, logger *log.Logger) error {
	fv := s.Freshness()
	if fv == nil || !m.readOnly {
		return nil
	}
	rep, err := fv.Check()
	if err != nil {
		logger.Printf("freshness: check: %v", err)
		return nil
	}
	if rep.Status != session.FreshOK && !rep.NothingRecorded() {
		if rep.Status == session.FreshRolledBack && m.freshness == "strict" {
			return mountFreshError(fmt.Errorf("%w: %s", session.ErrRolledBack, plural(len(rep.Issues), "issue")), dir)
		}
		freshLog(dir, func(s string) { logger.Print(s) })(rep.String())
	}
	return nil
}

// mountFreshError explains a refusal of the state lock (another mount on
// this machine records the vault, or a synced copy of it: the same
// VaultID, in the same state directory) and a strict mount's refusal of
// a vault in dir that went back (exit 28, with the next steps).
func mountFreshError(err error, dir string) error {
	if errors.Is(err, session.ErrFreshnessLocked) {
		return alreadyMounted(dir, mountedAt(dir))
	}
	if errors.Is(err, session.ErrRolledBack) {
		return withCode(ExitFreshRolledBack, fmt.Errorf("%w; not mounted (--freshness strict): see encryptfs freshness status %s, or take the vault as it is with encryptfs freshness accept %s", err, dir, dir))
	}
	return err
}

// checkNotMounted refuses (8), before any password is asked, a second
// mount of a vault with freshness that would share this machine's state
// directory with a mount already serving it: that mount holds the state's
// lock. (The VaultID read here is not authenticated yet: it only chooses
// which lock to look at; the session takes the lock for real.)
func checkNotMounted(dir string, c *session.Config, stateDir string) error {
	if stateDir != "" || !hasFreshness(c) {
		return nil
	}
	lock := session.FreshnessStateDir("", c.Params)
	if lock == "" || session.WaitFreshnessUnlocked(lock, 0) {
		return nil
	}
	if at := mountedAt(dir); at != "" {
		return alreadyMounted(dir, at)
	}
	// No mount of it: a daemon that was just unmounted may still write
	// its last batch. Wait for it as the unlock would.
	if session.WaitFreshnessUnlocked(lock, stateLockWait) {
		return nil
	}
	return alreadyMounted(dir, "")
}

// alreadyMounted is the one line for a vault this machine serves already
// (exit 8), naming where when it is known.
func alreadyMounted(dir, at string) error {
	if at == "" {
		return errorfCode(ExitMountPoint, "%s is already mounted on this machine (or a copy of it with the same vault ID); unmount it first, or give a second mount its own --state-dir", dir)
	}
	return errorfCode(ExitMountPoint, "%s is already mounted on %s; unmount it first (encryptfs unmount %s), or give a second mount its own --state-dir", dir, at, at)
}

// mountSource returns the source of the encryptfs mount on mnt
// (CIPHERDIR, unless --fsname changed it), "" if there is none.
func mountSource(mnt string) string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	src := ""
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 || unescapeMountinfo(fields[4]) != mnt {
			continue
		}
		for i := 5; i+2 < len(fields); i++ {
			if fields[i] == "-" {
				if fields[i+1] == "fuse.encryptfs" {
					src = unescapeMountinfo(fields[i+2])
				}
				break
			}
		}
	}
	return src
}

// waitMountEnded waits, after an unmount of the vault in cipherDir, for
// its daemon to write its last freshness batch and let go of the state
// (the default state directory; one a mount chose with --state-dir is
// not known here), so that what runs next (a backup, status, another
// mount) sees the vault as recorded. Bounded by stateLockWait.
// It returns that state directory ("" without freshness).
func waitMountEnded(cipherDir string) string {
	if cipherDir == "" {
		return ""
	}
	c, err := session.LoadConfig(cipherDir)
	if err != nil || !hasFreshness(c) {
		return ""
	}
	dir := session.FreshnessStateDir("", c.Params)
	session.WaitFreshnessUnlocked(dir, stateLockWait)
	return dir
}
