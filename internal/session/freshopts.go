package session

import (
	"os"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fresh"
)

// FreshnessUse is what a session does with a vault's freshness (feature
// flag "Freshness", docs/format.md §15).
//
// Why writers must record: a change made without recording it looks,
// to every client that saw the records, like the vault went back (a
// deleted or renamed name whose record still stands). So every door that
// may write records, and only a door that surely does not write may
// skip it.
type FreshnessUse int

const (
	// FreshnessRecord (the default): a writer. It checks the vault at
	// start (logging what differs), records what it changes, and flushes
	// at Close. It holds the state directory's lock: one writer per state
	// directory (fresh.ErrLocked for a second).
	FreshnessRecord FreshnessUse = iota
	// FreshnessCheck: freshness is opened offline (Options.Offline): the
	// caller may Check or Accept; nothing is recorded.
	FreshnessCheck
	// FreshnessOff: no freshness; for sessions that do not write the
	// vault's tree (they read, change only the config, or only unlock to
	// hand the key on).
	FreshnessOff
)

// freshnessFor is the fresh.Options the vault's Params and o ask for:
// o.Freshness if the caller set it (tests, the freshness command), else
// per o.FreshnessUse when the config has the flag, else nil.
func (o Options) freshnessFor(p config.Params) *fresh.Options {
	if o.Freshness != nil {
		return o.Freshness
	}
	if !p.Has(config.FlagFreshness) || o.FreshnessUse == FreshnessOff {
		return nil
	}
	return &fresh.Options{
		StateDir: FreshnessStateDir(o.FreshnessStateDir, p),
		VaultID:  p.VaultID,
		Offline:  o.FreshnessUse == FreshnessCheck,
		Log:      o.FreshnessLog,
		Strict:   o.FreshnessStrict,
	}
}

// FreshnessStateDir is the state directory freshness uses for the vault
// with Params p: dir if given, else the default from the VaultID under
// $XDG_STATE_HOME, ~/.local/state or /var/lib (fresh.DefaultStateRoot).
// "" for a vault without a VaultID.
//
// Why from the VaultID in the config: the config is authenticated (its
// MAC under the master key), so an attacker who writes CIPHERDIR cannot
// point a client at another vault's state, or at none.
func FreshnessStateDir(dir string, p config.Params) string {
	if dir != "" || len(p.VaultID) == 0 {
		return dir
	}
	return fresh.StateDir(fresh.DefaultStateRoot(os.Getenv), p.VaultID)
}
