package session

import (
	"errors"

	"github.com/encryptfs/encryptfs/internal/config"
)

// errHasFreshness stops AddFreshness's config edit: nothing to write.
var errHasFreshness = errors.New("session: the vault has freshness already")

// AddFreshness adds the feature flag "Freshness" to the config of a bound
// vault (encryptfs upgrade): a change of the config only
// (config.UpgradeParams, which keeps the slots' SlotParams). Nothing in
// CIPHERDIR needs converting: a vault without manifests or epoch files is
// one no device has recorded yet, which the first writer (a mount)
// records whole, and which a check does not take for a rollback. It
// returns false if the vault had the flag already; an unbound vault is
// refused (the flag requires BoundLocations: config.ErrCorrupt).
func (s *Session) AddFreshness() (added bool, err error) {
	err = s.editConfig(func(c *config.Config, master []byte) error {
		if c.Params.Has(config.FlagFreshness) {
			return errHasFreshness
		}
		p, err := c.Params.WithFeature(config.FlagFreshness)
		if err != nil {
			return err
		}
		up, err := c.UpgradeParams(master, p, s.rand)
		if err != nil {
			return err
		}
		*c, added = *up, true
		return nil
	})
	if errors.Is(err, errHasFreshness) {
		return false, nil
	}
	return added, err
}
