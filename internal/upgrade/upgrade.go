// Package upgrade is the content upgrade (docs/format.md §14,
// "Upgrading"; §16, "Upgrading"): a vault whose objects are still v1 (a
// format-1 vault after its config upgrade, or a format-2 vault made
// before location binding) gets feature flags BoundLocations and
// FileRoots, a bound vault without roots gets FileRoots. Every v1
// encryptfs.dirid (and conflict copy of one) is rewritten in its v2 form,
// bound to its directory's place, and every regular file without a root
// is rewritten in the roots layout (roots.go) with a v2 header bound to
// its place(s), in this order, each step crash-safe:
//
//  1. The VaultID is drawn and written to encryptfs.upgrade in CIPHERDIR
//     (temp, fsync, rename, fsync; session.WriteUpgradeMarker): from then
//     on, every open but the upgrade's refuses the vault
//     (session.ErrUpgradeIncomplete), and a resumed upgrade binds to the
//     same VaultID.
//  2. Each object is converted in place of the old one: a file is copied
//     as the new header, its tag blocks and its chunks byte for byte at
//     their roots offsets (chunks are sealed to the file ID and their
//     index, not to offsets) to a temporary file beside it, fsynced and
//     renamed over it; a dirid is replaced the same way. Which objects
//     are done is told by the objects themselves (a v1 header is version
//     1 and 36 bytes, a v2 one version 2 and 128, with roots gen >= 1; a
//     v1 dirid is 16 bytes, a v2 one 54), so a resumed run converts
//     exactly what is left. Directories go in
//     post-order (see leaveDir), each fsynced after its changes.
//  3. The config gets the flags and the VaultID (config.UpgradeParams,
//     written atomically), last: until then no reader expects v2 objects
//     or roots.
//  4. encryptfs.upgrade is removed.
//
// Files converted by step 2 are written in the compact layout
// (CompactRoots). A vault with FileRoots alone (or files an older
// build's interrupted run left in that layout) gets the compact step
// (compact.go) in the same pattern: the scan and the re-rooting of DIRTY
// files before the marker, each file copied beside itself in the compact
// layout and renamed over (hard links relinked), and CompactRoots written
// to the config with the other flags, last.
//
// The package is of the engine's tier (above the session, below the
// doors): it reads and writes CIPHERDIR's objects raw, with sessions of
// the layouts it converts between. Its messages keep the "session:"
// prefix they had when it lived in the session, so that what the CLI
// prints did not change.
package upgrade

import (
	"bytes"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// ErrBlocked: the vault has something the content upgrade cannot
// convert (listed in the error); nothing was changed by this run.
var ErrBlocked = fault.New(fault.Corrupt, "session: the vault cannot be upgraded as it is")

// Progress is how far Content is: objects (files and directories) and
// backing bytes converted, of the totals found by its scan.
type Progress struct {
	Objects, TotalObjects int64
	Bytes, TotalBytes     int64
}

// Result says what Content did.
type Result struct {
	// AlreadyBound: the config had BoundLocations, FileRoots and
	// CompactRoots already;
	// at most a leftover marker was removed.
	AlreadyBound bool
	// Resumed: an interrupted upgrade was finished.
	Resumed bool
	VaultID []byte
	// Dirs and Files are the directory ID files and regular files
	// converted by this run; Relinked, hard links restored after a crash
	// between the two names of one file.
	Dirs, Files, Relinked int
	// Compacted counts the files with roots rewritten from the FileRoots
	// layout into the compact one (compact.go), Rerooted the DIRTY files
	// among them re-rooted first.
	Compacted, Rerooted int
	// Skipped counts the entries left as they are: names that do not
	// decrypt, and conflict copies hidden by another entry of the same
	// displayed name (docs/format.md §14, "Upgrading").
	Skipped int
}

// Content adds location binding and file roots to the vault of s (roots
// alone to a bound vault), which must have been opened with
// session.OpenWith (it needs the master key and the config) and
// Options.Upgrading; afterwards s is stale: close it and open the vault
// again. progress (may be nil) is called as objects are converted.
func Content(s *session.Session, progress func(Progress)) (Result, error) {
	cp, err := s.KeptParams()
	if err != nil {
		return Result{}, err
	}
	fs := s.Backing()
	rootfd, err := backing.OpenRoot(s.Dir())
	if err != nil {
		return Result{}, err
	}
	defer backing.Close(rootfd)
	m, err := s.ReadUpgradeMarker(rootfd)
	if err != nil {
		return Result{}, err
	}
	if session.Upgraded(cp) {
		return Result{AlreadyBound: true, VaultID: cp.VaultID}, s.RemoveUpgradeMarker(rootfd)
	}
	// A marker is resumed from when this vault wrote it (its tag), or,
	// without a tag, when a build before the tag did: such a VaultID is
	// only kept if objects an interrupted run converted verify under it
	// (below); one planted in CIPHERDIR names nothing converted, and is
	// replaced by a random VaultID of this run.
	legacy := m != nil && !m.Tagged
	authentic := m != nil && m.Authentic
	var marked []byte
	if authentic || legacy {
		marked = m.VaultID
	}
	res := Result{Resumed: marked != nil, VaultID: marked}
	switch {
	case cp.Bound():
		// Bound already (without roots): the VaultID stays. A marker
		// holds the same one (written by this step's earlier run).
		res.VaultID = cp.VaultID
		if marked != nil && !bytes.Equal(marked, res.VaultID) {
			if !legacy {
				return res, fmt.Errorf("%w: %s names another VaultID than the config", tree.ErrCorruptDir, config.UpgradeMarkerName)
			}
			marked, res.Resumed = nil, false
		}
	case marked == nil:
		if res.VaultID, err = newVaultID(s); err != nil {
			return res, err
		}
	}
	bound, err := cp.WithBoundLocations(res.VaultID)
	if err != nil {
		return res, err
	}
	rooted, err := bound.WithFeature(config.FlagFileRoots)
	if err != nil {
		return res, err
	}
	// Files converted by this run are written in the compact layout
	// (b's suite); those with roots in the FileRoots layout (a vault
	// with FileRoots alone, or an older build's interrupted run) are
	// converted by the compact step (compact.go).
	p, err := rooted.WithFeature(config.FlagCompactRoots)
	if err != nil {
		return res, err
	}
	// Both sessions have every epoch's keys after a revoke (§3b):
	// objects keep the epoch they record (a converted header keeps its
	// epoch field).
	b, err := s.WithParams(p)
	if err != nil {
		return res, err
	}
	defer b.Close()
	old, err := s.WithParams(rooted)
	if err != nil {
		return res, err
	}
	defer old.Close()
	unrooted, err := s.UnrootedSuite(p)
	if err != nil {
		return res, err
	}
	defer unrooted.Wipe()
	u := &upgrader{v1: s, b: b, rootfd: rootfd, unrooted: unrooted}
	if err := u.scan(); err != nil {
		return res, err
	}
	if legacy && marked != nil && !cp.Bound() && !u.anyConverted() {
		// An untagged marker that no converted object vouches for:
		// planted, or an old build's run interrupted before it
		// converted anything. Start afresh with a VaultID of this run.
		if err := s.RemoveUpgradeMarker(rootfd); err != nil {
			return res, err
		}
		return Content(s, progress)
	}
	res.Skipped = u.skipped
	if len(u.problems) > 0 {
		return res, u.blocked()
	}
	// A vault with FileRoots: everything the compact step finds to do
	// is known, and DIRTY files re-rooted, before the marker is written.
	// Otherwise the files it would find are written by the roots step
	// below, in the compact layout: it runs after it.
	compact := newCompacter(u, old)
	hadRoots := cp.Has(config.FlagFileRoots)
	if hadRoots {
		err := compact.prepare()
		res.Rerooted = compact.rerooted
		if err != nil {
			return res, err
		}
	}
	if !authentic || !bytes.Equal(m.VaultID, res.VaultID) {
		// (Re)written with this build's tag, before any object changes.
		if err := s.WriteUpgradeMarker(rootfd, res.VaultID); err != nil {
			return res, err
		}
	}
	if err := u.convert(progress); err != nil {
		return res, err
	}
	res.Dirs, res.Files, res.Relinked = u.doneDirs, u.doneFiles, u.relinked
	if !hadRoots {
		if err := compact.prepare(); err != nil {
			return res, err
		}
	}
	if err := compact.convert(progress); err != nil {
		return res, err
	}
	res.Compacted = compact.converted
	res.Relinked += compact.relinked
	if res.Resumed {
		// A config temporary beside the marker is this upgrade's own
		// last step, interrupted: nothing else writes the config of a
		// vault every other open refuses.
		fs.Unlinkat(rootfd, config.FileName+".tmp", 0)
	}
	// The flags and the VaultID last: every object is v2 with a root
	// and durable.
	if err := s.SetUpgradedParams(p); err != nil {
		return res, err
	}
	return res, s.RemoveUpgradeMarker(rootfd)
}

// newVaultID draws a VaultID for the vault being upgraded.
func newVaultID(s *session.Session) ([]byte, error) {
	vid := make([]byte, config.VaultIDSize)
	if _, err := io.ReadFull(s.Rand(), vid); err != nil {
		return nil, fmt.Errorf("session: random VaultID: %w", err)
	}
	return vid, nil
}
