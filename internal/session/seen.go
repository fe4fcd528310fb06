package session

import (
	"fmt"
	"strings"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/fresh"
)

// SeenUse says what an open does with this machine's memory of the
// vault's configs (Options.SeenDir, fresh.Memory).
type SeenUse int

const (
	// SeenCheck (every door): refuse a config at a lower key epoch (and,
	// with FreshnessStrict, one older in any way), log an older one
	// otherwise, and remember a newer one.
	SeenCheck SeenUse = iota
	// SeenReport (freshness status): refuse nothing, remember nothing
	// older; Session.ConfigBack lists how the config is older.
	SeenReport
	// SeenAccept (freshness accept): take the config as it is, also an
	// older one, and remember it so.
	SeenAccept
)

// seenVault is a session's handle on this machine's memory of its vault.
type seenVault struct {
	mem  fresh.Memory
	id   [keys.LocalIDSize]byte
	use  SeenUse
	old  fresh.ConfigSeen // what the memory held at the open
	back []string         // how the opened config is older than old
}

// configSeen is what config c says of the vault.
func configSeen(c *config.Config) fresh.ConfigSeen {
	return fresh.ConfigSeen{Format: c.Params.FormatVersion, Flags: c.Params.FeatureFlags, Epoch: c.Epoch()}
}

// checkSeen compares config c (whose first master key is k0) with this
// machine's memory of the vault, before the session is built: nil when
// o keeps no memory.
func (o Options) checkSeen(dir string, c *config.Config, k0 []byte) (*seenVault, error) {
	if o.SeenDir == "" {
		return nil, nil
	}
	id, err := keys.LocalID(k0)
	if err != nil {
		return nil, err
	}
	sv := &seenVault{mem: fresh.Memory(o.SeenDir), id: id, use: o.SeenUse}
	old, ok, err := sv.mem.Load(id[:])
	if err != nil {
		return nil, fmt.Errorf("session: this machine's memory of the vault: %w", err)
	}
	if !ok {
		return sv, nil
	}
	sv.old = old
	now := configSeen(c)
	sv.back = old.Back(now)
	if len(sv.back) == 0 || o.SeenUse != SeenCheck {
		return sv, nil
	}
	what := strings.Join(sv.back, "; ")
	if old.EpochBack(now) || o.FreshnessStrict {
		// A config from before a revoke wraps the master key under a
		// revoked credential again: whatever is written under it the
		// revoked credential reads. Never write, nor serve, under it.
		return nil, fmt.Errorf("%s: %w: it is %s; if you restored it yourself, encryptfs freshness accept %s takes it", dir, fresh.ErrConfigRolledBack, what, dir)
	}
	// Logged by the session that serves (a mount's daemon), not by the
	// foreground process that only unlocks for it as well.
	if o.FreshnessLog != nil && o.FreshnessUse != FreshnessOff {
		o.FreshnessLog(fmt.Sprintf("freshness: %s: encryptfs.conf was put back to an older version: it is %s; see encryptfs freshness status %s", dir, what, dir))
	}
	return sv, nil
}

// record remembers config c as opened: raised to it, or (SeenAccept) set
// to it. Nothing is remembered from a config older than the memory
// unless accepted, and nothing is written when nothing changes.
func (sv *seenVault) record(c *config.Config) error {
	if sv == nil || c == nil {
		return nil
	}
	now := configSeen(c)
	next := sv.old.Merge(now)
	switch {
	case sv.use == SeenAccept:
		next = fresh.ConfigSeen{}.Merge(now)
	case len(sv.back) > 0:
		return nil
	}
	if len(sv.old.Back(next)) == 0 && len(next.Back(sv.old)) == 0 && sv.old.Format != 0 {
		return nil // nothing new
	}
	if err := sv.mem.Save(sv.id[:], next); err != nil {
		return fmt.Errorf("session: remembering the vault's config: %w", err)
	}
	sv.old, sv.back = next, nil
	return nil
}

// ConfigBack lists how the opened config is older than one this machine
// opened the vault with before (empty: it is not, or no memory is kept).
func (s *Session) ConfigBack() []string {
	if s.seen == nil {
		return nil
	}
	return s.seen.back
}
