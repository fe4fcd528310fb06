package session

import (
	"errors"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fresh"
)

// errHasFeature stops addFeatures's config edit: nothing to write.
var errHasFeature = errors.New("session: the vault has the feature already")

// AddFreshness adds the feature flags "Freshness" and "ManifestBuckets"
// to the config of a bound vault (encryptfs upgrade): a change of the
// config only
// (config.UpgradeParams, which keeps the slots' SlotParams). Nothing in
// CIPHERDIR needs converting: a vault without manifests or epoch files is
// one no device has recorded yet, which the first writer (a mount)
// records whole, and which a check does not take for a rollback. It
// returns false if the vault had the flag already; an unbound vault is
// refused (the flag requires BoundLocations: config.ErrCorrupt).
func (s *Session) AddFreshness() (added bool, err error) {
	// With its manifests in buckets from the start: a vault that gets
	// freshness has no manifests to pack.
	return s.addFeatures(config.FlagFreshness, config.FlagFreshness, config.FlagManifestBuckets)
}

// AddTrimmedLeaves adds the feature flag "TrimmedLeaves" to the config of
// a vault with file roots (encryptfs upgrade): a change of the config
// only. Every file keeps the root it has (its header says by which rule:
// the flag TRIMMED), and gets trimmed leaves at its next clean header
// (docs/format.md §16, "Trimmed leaves"). A session opened before keeps
// its rule and refuses TRIMMED headers: a device with the vault mounted
// must remount. It returns false if the vault had the flag already; a
// vault without FileRoots is refused (config.ErrCorrupt).
func (s *Session) AddTrimmedLeaves() (added bool, err error) {
	return s.addFeatures(config.FlagTrimmedLeaves, config.FlagTrimmedLeaves)
}

// addFeatures adds the feature flags to the config (config.UpgradeParams,
// which keeps the slots' SlotParams) unless it has flag have already: then
// it returns false and writes nothing.
func (s *Session) addFeatures(have string, flags ...string) (added bool, err error) {
	err = s.editConfig(func(c *config.Config, master []byte) error {
		if c.Params.Has(have) {
			return errHasFeature
		}
		p := c.Params
		for _, f := range flags {
			var ferr error
			if p, ferr = p.WithFeature(f); ferr != nil {
				return ferr
			}
		}
		up, err := c.UpgradeParams(master, p, s.rand)
		if err != nil {
			return err
		}
		*c, added = *up, true
		return nil
	})
	if errors.Is(err, errHasFeature) {
		return false, nil
	}
	return added, err
}

// Packed is what PackManifests did.
type Packed struct {
	Added           bool // the config got the flag "ManifestBuckets"
	Packed, Removed int  // manifest files packed into buckets, and removed after
}

// PackManifests moves the freshness manifests of a vault with freshness
// into buckets (encryptfs upgrade; fresh.PackManifests): every device's
// manifest files are packed, the config gets the flag
// "ManifestBuckets", then the packed files are removed. Each step is
// crash-safe and a run finishes what an interrupted one left, so on a
// vault with the flag it only removes leftovers. The vault must not be
// mounted (a mount of the old layout writes manifest files).
func (s *Session) PackManifests() (Packed, error) {
	var out Packed
	var err error
	if !s.Params().Has(config.FlagManifestBuckets) {
		if out.Packed, err = fresh.PackManifests(s.dir); err != nil {
			return out, err
		}
		if out.Added, err = s.addFeatures(config.FlagManifestBuckets, config.FlagManifestBuckets); err != nil {
			return out, err
		}
	}
	out.Removed, err = fresh.RemovePacked(s.dir)
	return out, err
}

// RemovePackedManifests removes the manifest files of the vault in dir
// that its buckets hold byte for byte (what an interrupted PackManifests
// left after the config got its flag). No key is needed: nothing is
// removed that a bucket does not hold.
func RemovePackedManifests(dir string) (int, error) { return fresh.RemovePacked(dir) }
