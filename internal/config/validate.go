package config

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// Validate checks every parameter against what this build supports: format
// version, feature flags, cipher, chunk size, reverse mode and KDF bounds.
// Errors wrap ErrFutureVersion, ErrUnknownFeature or ErrCorrupt.
func (p Params) Validate() error {
	if p.FormatVersion > FormatVersion {
		return futureVersion(p.FormatVersion)
	}
	if p.FormatVersion < 1 {
		return fmt.Errorf("%w: FormatVersion %d is invalid", ErrCorrupt, p.FormatVersion)
	}
	required, optional := RequiredFlags(), []string(nil)
	if p.FormatVersion == FormatVersion2 {
		required, optional = RequiredFlagsV2(), optionalFlagNamesV2()
	}
	if err := validateFlags(p.FeatureFlags, required, optional); err != nil {
		return err
	}
	if err := p.validateFeatures(); err != nil {
		return err
	}
	switch content.Algorithm(p.Cipher) {
	case content.AES256GCM, content.XChaCha20Poly1305, content.AES256SIV:
	default:
		return fmt.Errorf("%w: unknown cipher %q", ErrCorrupt, p.Cipher)
	}
	if !validChunkSize(p.ChunkSize) {
		return fmt.Errorf("%w: chunk size %d is not a power of two between %d and %d",
			ErrCorrupt, p.ChunkSize, content.MinChunk, content.MaxChunk)
	}
	// Reverse mode derives chunk nonces deterministically; only SIV stays
	// safe under nonce reuse, so any other cipher here is an error.
	if p.Reverse && content.Algorithm(p.Cipher) != content.AES256SIV {
		return fmt.Errorf("%w: reverse mode requires cipher %s, not %q", ErrCorrupt, content.AES256SIV, p.Cipher)
	}
	if p.FormatVersion == FormatVersion2 {
		// Format 2 keeps the KDF in each password slot and has no
		// reverse mode: Params that carry either are not format 2.
		if p.Reverse {
			return fmt.Errorf("%w: %w", ErrCorrupt, ErrReverseV2)
		}
		if p.KDF.Algorithm != "" || p.KDF.Salt != nil || p.KDF.Time != 0 || p.KDF.MemoryKiB != 0 || p.KDF.Threads != 0 {
			return fmt.Errorf("%w: format 2 Params have no KDF (it is per password slot)", ErrCorrupt)
		}
		return nil
	}
	if err := p.KDF.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}

func futureVersion(v int) error {
	return fmt.Errorf("%w: vault format %d is newer than this encryptfs (reads format %d); upgrade encryptfs",
		ErrFutureVersion, v, FormatVersion)
}

// validateFlags requires exactly the required flags, each once, in any
// order, and allows the optional ones (format 2's features, features.go),
// each at most once. A flag this build does not know refuses to open
// (ErrUnknownFeature).
func validateFlags(flags, required, optional []string) error {
	seen := make(map[string]bool, len(flags))
	known := make(map[string]bool)
	for _, f := range required {
		known[f] = true
	}
	for _, f := range optional {
		known[f] = true
	}
	for _, f := range flags {
		if !known[f] {
			return fmt.Errorf("%w: %q", ErrUnknownFeature, f)
		}
		if seen[f] {
			return fmt.Errorf("%w: feature flag %q listed twice", ErrCorrupt, f)
		}
		seen[f] = true
	}
	for _, f := range required {
		if !seen[f] {
			return fmt.Errorf("%w: required feature flag %q is missing", ErrCorrupt, f)
		}
	}
	return nil
}

func validChunkSize(n int) bool {
	return n >= content.MinChunk && n <= content.MaxChunk && n&(n-1) == 0
}
