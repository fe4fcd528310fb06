package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// Format 2's optional features (docs/format.md §3a, "Feature flags"). A
// format-2 vault names the features it uses in Params.FeatureFlags; a
// reader refuses a flag it does not know (ErrUnknownFeature), so a vault
// never opens in a build that would ignore one of its protections.
// `encryptfs upgrade` adds features to an existing vault (UpgradeParams).

// FlagBoundLocations: directory ID files and file headers carry location
// bindings (docs/format.md §14). Needs Params.VaultID.
const FlagBoundLocations = "BoundLocations"

// FlagFileRoots: every file header carries a root over the file's chunk
// tags, kept in tag blocks between the chunks (docs/format.md §16). Needs
// BoundLocations (the roots live in the v2 header).
const FlagFileRoots = "FileRoots"

// FlagCompactRoots: the files of a vault with FileRoots use the compact
// layout: tag block 0 stored in pieces after chunks 0 and 15, only once
// the file has chunks after them (docs/format.md §16, "Compact layout").
// Headers and roots are FileRoots'. A build without the flag refuses the
// vault (it would read chunk 0 where tag block 0 was).
const FlagCompactRoots = "CompactRoots"

// FlagTrimmedLeaves: the roots of a vault with FileRoots hash each tag
// block up to its last non-zero entry (a file of one chunk: 16 bytes, not
// 4096), and say so with the header flag TRIMMED (docs/format.md §16,
// "Trimmed leaves"). Files whose header lacks the flag keep their roots
// until their next clean header, so adding the flag changes the config
// only. A build without the flag refuses the vault (it would not accept
// a TRIMMED header).
const FlagTrimmedLeaves = "TrimmedLeaves"

// FlagFreshness: each device records what it changed in MAC'd manifests
// and epoch files, and a client detects rollback and deletion
// (docs/format.md §15). Names objects by their bound IDs, so it requires
// BoundLocations.
const FlagFreshness = "Freshness"

// FlagManifestBuckets: a device's freshness manifests are packed into at
// most 256 bucket files by the first byte of the directory ID, instead of
// one file per directory (docs/format.md §15, "Buckets"): the same MAC'd
// manifests, fewer blocks. A build without the flag refuses the vault (it
// would find no manifests and report every directory rolled back).
const FlagManifestBuckets = "ManifestBuckets"

// VaultIDSize is the size of Params.VaultID.
const VaultIDSize = 16

// featureV2 is one optional flag of format 2 and the flags it needs.
type featureV2 struct {
	name     string
	requires []string
}

// featuresV2 is THE list of the optional feature flags of format 2 this
// build knows, with what each requires: one line per feature.
func featuresV2() []featureV2 {
	return []featureV2{
		{FlagBoundLocations, nil},
		{FlagFileRoots, []string{FlagBoundLocations}},
		{FlagCompactRoots, []string{FlagFileRoots}},
		{FlagTrimmedLeaves, []string{FlagFileRoots}},
		// KeyEpochs (epochs.go): only bound objects carry an epoch, so a
		// session refuses it without BoundLocations (session.ErrRevokeUnbound);
		// not required here, so that the epoch vectors stay config-only.
		{FlagKeyEpochs, nil},
		{FlagFreshness, []string{FlagBoundLocations}},
		{FlagManifestBuckets, []string{FlagFreshness}},
	}
}

// optionalFlagNamesV2 returns the names of featuresV2.
func optionalFlagNamesV2() []string {
	var out []string
	for _, f := range featuresV2() {
		out = append(out, f.name)
	}
	return out
}

// Has reports whether p lists feature flag name.
func (p Params) Has(name string) bool { return slices.Contains(p.FeatureFlags, name) }

// Bound reports whether the vault binds locations (FlagBoundLocations):
// its VaultID is then set.
func (p Params) Bound() bool { return p.Has(FlagBoundLocations) }

// validateFeatures checks what the optional flags imply: each flag's
// prerequisites are listed, and VaultID is present (VaultIDSize bytes)
// exactly when BoundLocations is. Format 1 has neither.
func (p Params) validateFeatures() error {
	if p.FormatVersion != FormatVersion2 {
		if p.VaultID != nil {
			return fmt.Errorf("%w: format %d Params have no VaultID", ErrCorrupt, p.FormatVersion)
		}
		return nil
	}
	for _, f := range featuresV2() {
		if !p.Has(f.name) {
			continue
		}
		for _, r := range f.requires {
			if !p.Has(r) {
				return fmt.Errorf("%w: feature flag %q needs %q", ErrCorrupt, f.name, r)
			}
		}
	}
	switch {
	case p.Bound() && len(p.VaultID) != VaultIDSize:
		return fmt.Errorf("%w: %s needs a VaultID of %d bytes (have %d)", ErrCorrupt, FlagBoundLocations, VaultIDSize, len(p.VaultID))
	case !p.Bound() && p.VaultID != nil:
		return fmt.Errorf("%w: VaultID without feature flag %s", ErrCorrupt, FlagBoundLocations)
	}
	return nil
}

// WithFeature returns p (format 2) with the feature flag name added, or p
// unchanged if it has it already; the result is validated (a flag's
// prerequisites must be there). Not for BoundLocations, which brings a
// VaultID (WithBoundLocations).
func (p Params) WithFeature(name string) (Params, error) {
	if p.FormatVersion != FormatVersion2 {
		return Params{}, fmt.Errorf("config: %s: %w", name, ErrNotV2)
	}
	if p.Has(name) {
		return p, nil
	}
	q := p
	q.FeatureFlags = append(slices.Clone(p.FeatureFlags), name)
	if err := q.Validate(); err != nil {
		return Params{}, err
	}
	return q, nil
}

// WithBoundLocations returns p (format 2) with FlagBoundLocations and
// vaultID, or p unchanged if it has them already.
func (p Params) WithBoundLocations(vaultID []byte) (Params, error) {
	if p.FormatVersion != FormatVersion2 {
		return Params{}, fmt.Errorf("config: %s: %w", FlagBoundLocations, ErrNotV2)
	}
	if p.Bound() {
		return p, nil
	}
	q := p
	q.FeatureFlags = append(slices.Clone(p.FeatureFlags), FlagBoundLocations)
	q.VaultID = slices.Clone(vaultID)
	if err := q.Validate(); err != nil {
		return Params{}, err
	}
	return q, nil
}

// decodeVaultID decodes the stored "VaultID" (raw JSON, nil if absent)
// strictly: a base64 (standard, padded) string; null or an empty string
// is not "absent" but corrupt, so that one Params value has one reading.
func decodeVaultID(raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%w: VaultID: %w", ErrCorrupt, err)
	}
	id, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(id) == 0 {
		return nil, fmt.Errorf("%w: VaultID %q is not base64 of %d bytes", ErrCorrupt, s, VaultIDSize)
	}
	return id, nil
}

// UpgradeParams replaces the Params of format-2 config c by p, which may
// only add feature flags (and the VaultID that comes with
// BoundLocations): same cipher and chunk size, no flag removed. It needs
// the master key: the config MAC must verify before, and is recomputed
// over the new Params.
//
// Why the slots keep the Params they were sealed under (SlotParams): each
// slot's wrap authenticates the Params bytes (slotAD), and re-sealing a
// slot needs its secret: every password, keyfile, age identity and
// recovery key of the vault, which the one running the upgrade does not
// have. So the first UpgradeParams keeps the old Params bytes as
// SlotParams, which the wraps (and the slots added later) authenticate;
// the config MAC, under the master key, covers Params, the slots and
// SlotParams, so no one without the key can change either (§3a).
//
// A config with master-key epochs (§3b) has its older keys sealed with
// the Params bytes in the AD (epochAD), and unlike a slot's wrap that
// seal needs only the current key (masterKey), which the upgrade has: the
// chain is unsealed under the old Params and sealed again under the new
// ones, with a fresh random nonce from rand. (Keeping the old AD, as the
// slots do, would leave OldEpochs unopenable: every later open failed
// with ErrTampered.) Why a second seal under the same K_e is safe: a
// 96-bit random nonce per seal, and a key seals once per revoke plus once
// per upgrade (a handful of times), far below GCM's random-nonce bound;
// the plaintext is the same chain each time.
func (c *Config) UpgradeParams(masterKey []byte, p Params, rand io.Reader) (*Config, error) {
	if !c.IsV2() {
		return nil, ErrNotV2
	}
	if err := c.VerifyMAC(masterKey); err != nil {
		return nil, err
	}
	old := c.Params
	if p.FormatVersion != old.FormatVersion || p.Cipher != old.Cipher || p.ChunkSize != old.ChunkSize {
		return nil, fmt.Errorf("config: upgrade params: format, cipher and chunk size cannot change")
	}
	for _, f := range old.FeatureFlags {
		if !p.Has(f) {
			return nil, fmt.Errorf("config: upgrade params: feature flag %q cannot be removed", f)
		}
	}
	if old.VaultID != nil && !bytes.Equal(old.VaultID, p.VaultID) {
		return nil, fmt.Errorf("config: upgrade params: the VaultID cannot change")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	raw, err := encodeParamsV2(p)
	if err != nil {
		return nil, err
	}
	next := *c
	next.Slots = slices.Clone(c.Slots)
	next.Params, next.rawParams, next.raw = p, raw, nil
	if next.rawSlotParams == nil {
		next.rawSlotParams = slices.Clone(c.rawParams)
	}
	if next.epochs, err = c.resealEpochs(masterKey, raw, rand); err != nil {
		return nil, err
	}
	if next.MAC, err = computeMAC(masterKey, next.rawParams, next.rawSlots, next.rawSlotParams, next.epochs.macTail()); err != nil {
		return nil, err
	}
	return &next, nil
}

// slotParams are the Params bytes the slots' wraps authenticate.
func (c *Config) slotParams() []byte {
	if c.rawSlotParams != nil {
		return c.rawSlotParams
	}
	return c.rawParams
}

// decodeSlotParams checks a stored SlotParams against the config's
// Params: valid format-2 Params of the same cipher and chunk size whose
// flags Params all still has (UpgradeParams only adds).
func decodeSlotParams(raw []byte, p Params) error {
	sp, err := decodeParamsV2(raw)
	if err != nil {
		return fmt.Errorf("SlotParams: %w", err)
	}
	if sp.Cipher != p.Cipher || sp.ChunkSize != p.ChunkSize {
		return fmt.Errorf("%w: SlotParams differ from Params in cipher or chunk size", ErrCorrupt)
	}
	for _, f := range sp.FeatureFlags {
		if !p.Has(f) {
			return fmt.Errorf("%w: SlotParams have feature flag %q that Params lack", ErrCorrupt, f)
		}
	}
	return nil
}
