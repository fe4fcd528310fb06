package cli

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/upgrade"
	"github.com/spf13/cobra"
)

func newUpgradeCommand(a *App) *cobra.Command {
	cmd := newCommand("upgrade", "CIPHERDIR", 1, 1, groupVault, "bring a vault to the current format in place: key slots (format 2), then location binding and file roots in the compact layout (every directory ID and file rewritten; a vault with file roots alone gets the compact layout: each file's first chunks and tag block 0 moved; resumable), then freshness (the config only), then freshness manifests packed into buckets (unmounted; resumable), then trimmed leaves for file roots (the config only)", dirArg)
	fs := cmd.Flags()
	var u unlockFlags
	u.register(fs, "password")
	var kf kdfFlags
	kf.register(fs)
	asJSON := fs.Bool("json", false, "report progress as JSON lines on stderr")
	flagGroup(fs, groupOutput, "json")
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		return runUpgrade(a, pos[0], u, kf, *asJSON)
	}
	return cmd
}

// runUpgrade brings the vault in dir to the current format, in two steps,
// each skipped when done:
//
//  1. A format-1 config is rewritten as format 2 (session.Upgrade): the
//     same master key, so no file changes and a mount keeps running; the
//     password becomes key slot 1.
//  2. Content without location binding or file roots gets them
//     (upgrade.Content): every dirid is rewritten bound, and every
//     file in the roots layout (bound header, tag blocks, root), crash-safe
//     and resumable, and BoundLocations, FileRoots and CompactRoots are
//     written to the config last. A vault with FileRoots alone gets
//     CompactRoots: every file's first 16 chunks and tag block 0 are moved
//     into the compact layout (headers unchanged; DIRTY files re-rooted
//     first). The vault must not be mounted; an interrupted run is
//     finished by running upgrade again (every other command refuses the
//     vault until then).
//  3. A bound vault without freshness gets the feature flags "Freshness"
//     and "ManifestBuckets" (session.AddFreshness): the config only; the
//     vault's first mount after it records the vault (docs/format.md §15).
//  4. A vault with freshness whose manifests are one file per directory
//     gets them packed into buckets and the flag "ManifestBuckets"
//     (session.PackManifests; §15, "Buckets"). The vault must not be
//     mounted; an interrupted run is finished by running upgrade again.
//  5. A vault with file roots gets the feature flag "TrimmedLeaves"
//     (session.AddTrimmedLeaves; §16, "Trimmed leaves"): the config
//     only; each file's root moves to trimmed leaves at its next write.
//
// An up-to-date vault is not an error (exit 0), so that scripts can run
// it twice.
func runUpgrade(a *App, dir string, u unlockFlags, kf kdfFlags, asJSON bool) error {
	if err := u.check(); err != nil {
		return err
	}
	c, err := a.loadConfig(dir)
	if errors.Is(err, session.ErrConfigNotFound) {
		if _, rerr := a.loadReverseConfig(dir); rerr == nil {
			return errorfCode(ExitUnsupported, "upgrade: %s is set up for reverse mode, whose config stays format 1 (a copy of the view must open as the format-1 vault it shows)", dir)
		}
	}
	if err != nil {
		return err
	}
	if c.Params.Reverse {
		return withCode(ExitUnsupported, fmt.Errorf("upgrade: %w", session.ErrReverseV2))
	}
	wasBound := c.Params.Bound()
	hadRoots := wasBound && c.Params.Has(session.FlagFileRoots)
	if hadRoots && c.Params.Has(session.FlagCompactRoots) && !markerLeft(dir) {
		switch {
		case !c.Params.Has(session.FlagFreshness):
			return upgradeFreshness(a, dir, c, u)
		case !c.Params.Has(session.FlagBuckets):
			return upgradeBuckets(a, dir, c, u)
		case !c.Params.Has(session.FlagTrimmed):
			return upgradeTrimmed(a, dir, c, u)
		}
		// Manifest files an interrupted packing left (step 4's last
		// part): removed without the key, only where the bucket holds
		// the same bytes.
		if n, err := session.RemovePackedManifests(dir); err != nil {
			return fmt.Errorf("upgrade: %w", err)
		} else if n > 0 {
			fmt.Fprintf(a.Stdout, "Removed %d manifest files an interrupted upgrade had packed into buckets already.\n", n)
		}
		fmt.Fprintf(a.Stdout, "%s is up to date (format 2: key slots, location binding, file roots (compact, trimmed leaves), freshness, manifest buckets); nothing to do.\n", dir)
		return nil
	}
	if at := mountedAt(dir); at != "" {
		return fmt.Errorf("upgrade: %s is mounted at %s; unmount it first (the upgrade rewrites every file's header)", dir, at)
	}
	var s *session.Session
	if !c.IsV2() {
		if s, err = upgradeConfig(a, dir, c, u, kf); err != nil {
			return err
		}
	} else if s, err = unlockForUpgrade(a, dir, c, u); err != nil {
		return err
	}
	defer s.Close()
	prog := a.newProgress("upgrade", asJSON)
	res, err := upgrade.Content(s, func(p upgrade.Progress) {
		if prog != nil && prog.totalFiles == 0 && p.TotalObjects > 0 {
			prog.setTotals(p.TotalObjects, p.TotalBytes)
		}
		prog.set(p.Objects, p.Bytes)
	})
	prog.finish()
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	added, ferr := s.AddFreshness()
	if ferr != nil {
		return fmt.Errorf("upgrade: add freshness: %w", ferr)
	}
	trimmed, terr := s.AddTrimmedLeaves()
	if terr != nil {
		return fmt.Errorf("upgrade: add trimmed leaves: %w", terr)
	}
	defer reportTrimmed(a, trimmed)
	packed, perr := s.PackManifests()
	if perr != nil {
		return fmt.Errorf("upgrade: pack freshness manifests: %w", perr)
	}
	defer reportPacked(a, packed)
	switch {
	case res.AlreadyBound:
		fmt.Fprintf(a.Stdout, "%s is up to date (format 2: key slots, location binding, file roots (compact)); removed the marker of a finished upgrade.\n", dir)
		if added {
			fmt.Fprintln(a.Stdout, freshnessAdded)
		}
		return nil
	case res.Resumed:
		fmt.Fprintf(a.Stdout, "Finished the interrupted upgrade of %s.\n", dir)
	}
	switch {
	case hadRoots:
		fmt.Fprintf(a.Stdout, "Moved the file roots of %s into the compact layout (tag block 0 in two pieces after chunks 0 and 15, headers unchanged): %d files rewritten", dir, res.Compacted)
		if res.Rerooted > 0 {
			fmt.Fprintf(a.Stdout, ", %d of them DIRTY (re-rooted from their chunks first, as fsck --repair does)", res.Rerooted)
		}
	case wasBound:
		fmt.Fprintf(a.Stdout, "Added file roots (compact layout) to %s: %d files rewritten", dir, res.Files+res.Compacted)
	default:
		fmt.Fprintf(a.Stdout, "Upgraded %s to location binding and file roots in the compact layout (VaultID %s): %d directory IDs and %d files rewritten", dir, hex.EncodeToString(res.VaultID), res.Dirs, res.Files+res.Compacted)
	}
	if res.Relinked > 0 {
		fmt.Fprintf(a.Stdout, ", %d hard links restored", res.Relinked)
	}
	fmt.Fprintln(a.Stdout, ".")
	if res.Skipped > 0 {
		fmt.Fprintf(a.Stdout, "%d entries whose names do not decrypt (or hidden sync-conflict copies) were left as they are; encryptfs fsck lists them.\n", res.Skipped)
	}
	switch {
	case hadRoots:
		fmt.Fprintf(a.Stdout, "A small file now takes a few hundred bytes instead of 4 KiB more. Older encryptfs versions, which do not know the compact layout, cannot open it.\n")
	case wasBound:
		fmt.Fprintf(a.Stdout, "A chunk or tag block put back from an older version of a file now fails to read (EIO). Older encryptfs versions cannot open it.\n")
	default:
		fmt.Fprintf(a.Stdout, "Contents moved to another name or directory in CIPHERDIR, or put back from an older version of a file, now fail to read (EIO). Older encryptfs versions cannot open it.\n")
	}
	if added {
		fmt.Fprintln(a.Stdout, freshnessAdded)
	}
	return nil
}

// freshnessAdded is what upgrade says when it turned freshness on.
const freshnessAdded = "Turned on freshness (rollback and deletion detection): the next mount records the vault; encryptfs freshness status checks it."

// upgradeFreshness is step 3 alone, on a vault with binding and roots but without freshness: a
// config change only, so a running mount is no obstacle (it goes on
// without freshness; its next mount records).
func upgradeFreshness(a *App, dir string, c *session.Config, u unlockFlags) error {
	s, err := a.unlockVault(dir, c, u, "Password")
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.AddFreshness(); err != nil {
		return fmt.Errorf("upgrade: add freshness: %w", err)
	}
	fmt.Fprintf(a.Stdout, "Upgraded %s: %s\n", dir, freshnessAdded)
	return addTrimmed(a, s)
}

// upgradeTrimmed is step 5 alone, on a vault with every other feature:
// the flag "TrimmedLeaves", a config change only.
func upgradeTrimmed(a *App, dir string, c *session.Config, u unlockFlags) error {
	s, err := a.unlockVault(dir, c, u, "Password")
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintf(a.Stdout, "Upgraded %s: ", dir)
	return addTrimmed(a, s)
}

// addTrimmed is step 5 (session.AddTrimmedLeaves), and says what it did.
func addTrimmed(a *App, s *session.Session) error {
	added, err := s.AddTrimmedLeaves()
	if err != nil {
		return fmt.Errorf("upgrade: add trimmed leaves: %w", err)
	}
	reportTrimmed(a, added)
	return nil
}

// reportTrimmed says that step 5 added its flag, if it did.
func reportTrimmed(a *App, added bool) {
	if added {
		fmt.Fprintln(a.Stdout, trimmedAdded)
	}
}

// trimmedAdded is what upgrade says when it added trimmed leaves.
const trimmedAdded = "Turned on trimmed leaves: a file's root now hashes the tag entries it has, not 4 KiB per block; each file moves to it at its next write (the config only). Remount the vault wherever it is mounted; older encryptfs versions cannot open it."

// upgradeBuckets is step 4 alone, on a vault with freshness whose
// manifests are one file per directory: they are packed into buckets
// (session.PackManifests). The vault must not be mounted: its mount
// writes manifest files.
func upgradeBuckets(a *App, dir string, c *session.Config, u unlockFlags) error {
	if at := mountedAt(dir); at != "" {
		return fmt.Errorf("upgrade: %s is mounted at %s; unmount it first (the upgrade packs its freshness manifests)", dir, at)
	}
	s, err := a.unlockVault(dir, c, u, "Password")
	if err != nil {
		return err
	}
	defer s.Close()
	packed, err := s.PackManifests()
	if err != nil {
		return fmt.Errorf("upgrade: pack freshness manifests: %w", err)
	}
	fmt.Fprintf(a.Stdout, "Upgraded %s: ", dir)
	reportPacked(a, packed)
	return addTrimmed(a, s)
}

// reportPacked says what PackManifests did, if anything.
func reportPacked(a *App, p session.Packed) {
	if p.Added {
		fmt.Fprintf(a.Stdout, "Packed %d freshness manifests into buckets (one file per 256th of the directories instead of one per directory). Older encryptfs versions cannot open the vault.\n", p.Packed)
	}
}

// markerLeft tells whether dir has the marker of a content upgrade (a
// bound config beside it: the last step was lost).
func markerLeft(dir string) bool {
	for _, name := range []string{session.UpgradeMarkerName, session.UpgradeMarkerName + ".tmp"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// upgradeConfig is step 1 (format-1 config to format 2) and returns the
// vault opened for step 2 with the same password.
func upgradeConfig(a *App, dir string, c *session.Config, u unlockFlags, kf kdfFlags) (*session.Session, error) {
	if u.nonPassword() {
		return nil, usageErrorf("upgrade: a format-1 vault's config upgrade needs its password (it becomes key slot 1); drop --recovery-key, --keyfile, --identity, --credential")
	}
	// As passwd: each cost not given as a flag keeps the stored one but is
	// raised to at least the default.
	k, err := kf.params(a.Rand, costsOf(c.Params.KDF).atLeast(a.defaultKDF()))
	if err != nil {
		return nil, err
	}
	if err := c.CheckKDFMemory(k.MemoryKiB); err != nil {
		return nil, fmt.Errorf("upgrade: the new password slot: %w (choose a smaller --kdf-memory)", err)
	}
	pw, err := a.readPassword(u.src, "Password", false)
	if err != nil {
		return nil, err
	}
	defer clear(pw)
	if err := session.Upgrade(dir, pw, k, session.Options{Config: c, Rand: a.Rand}); err != nil {
		if errors.Is(err, session.ErrWrongPassword) {
			return nil, err
		}
		return nil, fmt.Errorf("upgrade: %w", err)
	}
	fmt.Fprintf(a.Stdout, "Upgraded %s to format 2: key slot 1 (password, Argon2id t=%d m=%d MiB p=%d) opens it with the same password.\n",
		dir, k.Time, k.MemoryKiB/1024, k.Threads)
	fmt.Fprintf(a.Stdout, "The master key on paper still opens it (--recovery-key). Add keys with: encryptfs key add %s (--recipient, --new-keyfile, --recovery)\n", dir)
	next, err := a.loadConfig(dir)
	if err != nil {
		return nil, err
	}
	s, err := session.OpenWith(dir, keyslot.Credentials{Password: func() ([]byte, error) { return bytes.Clone(pw), nil }},
		session.Options{Config: next, Rand: a.Rand, Upgrading: true, FreshnessUse: session.FreshnessOff, SeenDir: seenDir("")})
	return a.opened(dir, s, err)
}

// unlockForUpgrade opens a format-2 vault for step 2, half-upgraded or not.
func unlockForUpgrade(a *App, dir string, c *session.Config, u unlockFlags) (*session.Session, error) {
	return a.unlockVaultWith(dir, c, u, "Password", session.Options{Config: c, Rand: a.Rand, Upgrading: true, FreshnessUse: session.FreshnessOff, SeenDir: seenDir("")})
}
