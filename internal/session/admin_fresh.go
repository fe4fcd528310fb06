package session

import (
	"os"
	"time"

	"github.com/encryptfs/encryptfs/internal/fresh"
)

// This machine's freshness state (docs/format.md §15) as the CLI's
// offline commands see it: freshness status|accept|forget|prune, and the
// waits of mount and unmount for a daemon that still holds the state.
// Re-exported or wrapped here so that the CLI reaches freshness only
// through the session.

// FreshnessStatus is the verdict of a freshness check (the Status of the
// report that Freshness().Check() and Accept() return).
type FreshnessStatus = fresh.Status

// The verdicts, in increasing gravity.
const (
	FreshOK         = fresh.OK         // everything is as recorded
	FreshBehind     = fresh.Behind     // a sync in flight could explain what differs
	FreshRolledBack = fresh.RolledBack // something went back or was deleted
)

// DefaultFreshnessGrace is how long a behind state may last before it
// counts as rolled back (freshness status --grace).
const DefaultFreshnessGrace = fresh.DefaultGrace

// Freshness's refusals, as the CLI tells them apart.
var (
	// ErrRolledBack: a strict mount refused a vault that went back.
	ErrRolledBack = fresh.ErrRolledBack
	// ErrFreshnessLocked: another process (a mount) holds this machine's
	// state of the vault.
	ErrFreshnessLocked = fresh.ErrLocked
)

// FreshnessStateRoot is the directory that holds this machine's
// freshness state of every vault, one directory per VaultID (hex), and
// seen/ (Options.SeenDir): $XDG_STATE_HOME/encryptfs, else
// ~/.local/state/encryptfs, else /var/lib/encryptfs.
func FreshnessStateRoot() string { return fresh.DefaultStateRoot(os.Getenv) }

// WaitFreshnessUnlocked waits up to d for no process to hold the lock of
// the state directory stateDir and reports whether none does (also when
// it has no lock). d = 0 only looks.
func WaitFreshnessUnlocked(stateDir string, d time.Duration) bool {
	return fresh.WaitUnlocked(stateDir, d)
}

// HasUnrecordedChanges reports whether the state directory stateDir
// keeps changes the last mount could not record.
func HasUnrecordedChanges(stateDir string) bool { return fresh.HasUnrecorded(stateDir) }

// FreshnessCheckOptions choose the state an offline freshness check or
// accept (encryptfs freshness status|accept) compares the vault with.
type FreshnessCheckOptions struct {
	StateDir string        // this machine's state of the vault (FreshnessStateDir)
	VaultID  []byte        // from the Params an unlock authenticated
	Grace    time.Duration // how long behind may last; 0: DefaultFreshnessGrace
}

// OpenFreshnessCheck opens the vault in dir (config c) with masterKey
// and its freshness offline (nothing recorded; Freshness().Check and
// Accept write the state). OpenWithMasterKey rather than a bare
// freshness: the config's epoch keys (§3b) come with it, and after a
// revoke the master key is K_e, which freshness alone would take for
// K_0.
func OpenFreshnessCheck(dir string, masterKey []byte, c *Config, o FreshnessCheckOptions) (*Session, error) {
	fo := fresh.Options{StateDir: o.StateDir, VaultID: o.VaultID, Offline: true, Grace: o.Grace}
	return OpenWithMasterKey(dir, masterKey, Options{Config: c, Freshness: &fo})
}
