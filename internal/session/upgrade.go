package session

import (
	"bytes"
	"crypto/hmac"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// The content upgrade (docs/format.md §14, "Upgrading"; §16, "Upgrading"):
// a vault whose objects are still v1 (a format-1 vault after its config
// upgrade, or a format-2 vault made before location binding) gets feature
// flags BoundLocations and FileRoots, a bound vault without roots gets
// FileRoots. Every v1 encryptfs.dirid (and conflict copy of one) is
// rewritten in its v2 form, bound to its directory's place, and every
// regular file without a root is rewritten in the roots layout
// (upgrade_roots.go) with a v2 header bound to its place(s), in this
// order, each step crash-safe:
//
//  1. The VaultID is drawn and written to encryptfs.upgrade in CIPHERDIR
//     (temp, fsync, rename, fsync): from then on, every open but
//     UpgradeContent's refuses the vault (ErrUpgradeIncomplete), and a
//     resumed upgrade binds to the same VaultID.
//  2. Each object is converted in place of the old one: a file is copied
//     as the new header, its tag blocks and its chunks byte for byte at
//     their roots offsets (chunks are sealed to the file ID and their
//     index, not to offsets) to a temporary file beside it, fsynced and
//     renamed over it; a dirid is replaced the same way. Which objects
//     are done is told by the objects themselves (a v1 header is version
//     1 and 36 bytes, a v2 one version 2 and 128, with roots gen >= 1; a
//     v1 dirid is 16 bytes, a v2 one 54), so a resumed run converts
//     exactly what is left. Directories go in
//     post-order (see scanDir), each fsynced after its changes.
//  3. The config gets the flags and the VaultID (config.UpgradeParams,
//     written atomically), last: until then no reader expects v2 objects
//     or roots.
//  4. encryptfs.upgrade is removed.
//
// Files converted by step 2 are written in the compact layout
// (CompactRoots). A vault with FileRoots alone (or files an older
// build's interrupted run left in that layout) gets the compact step
// (upgrade_compact.go) in the same pattern: the scan and the re-rooting
// of DIRTY files before the marker, each file copied beside itself in
// the compact layout and renamed over (hard links relinked), and
// CompactRoots written to the config with the other flags, last.

// ErrUpgradeIncomplete: a content upgrade of the vault was interrupted
// (encryptfs.upgrade exists, the config does not have BoundLocations and
// FileRoots yet):
// the vault holds v1 and v2 objects and is refused until the upgrade is
// run again, which finishes it.
var ErrUpgradeIncomplete = fault.New(fault.UnsupportedVault,
	"session: an upgrade of this vault was interrupted; run `encryptfs upgrade` on it again to finish it")

// ErrUpgradeBlocked: the vault has something the content upgrade cannot
// convert (listed in the error); nothing was changed by this run.
var ErrUpgradeBlocked = fault.New(fault.Corrupt, "session: the vault cannot be upgraded as it is")

// upgraded reports whether a vault with Params p has what the content
// upgrade gives: BoundLocations, FileRoots and CompactRoots.
func upgraded(p config.Params) bool {
	return p.Bound() && p.Has(config.FlagFileRoots) && p.Has(config.FlagCompactRoots)
}

// unrootedSuite is the content suite of v2 headers without roots, for
// vault Params p and the vault's keys K_0 … K_e (one key without epochs):
// the upgrade reads such headers (a bound vault's, of any epoch, §3b) and
// rewrites them with roots.
func unrootedSuite(p config.Params, chain [][]byte) (*content.Suite, error) {
	var s *content.Suite
	for e, key := range chain {
		k, err := keys.Derive(key)
		if err != nil {
			if s != nil {
				s.Wipe()
			}
			return nil, err
		}
		if e == 0 {
			s, err = content.NewBoundSuite(content.Algorithm(p.Cipher), p.ChunkSize, k.Contents, k.HeaderMAC)
		} else {
			err = s.AddEpoch(uint32(e), k.Contents, k.HeaderMAC)
		}
		k.Wipe()
		if err != nil {
			if s != nil {
				s.Wipe()
			}
			return nil, fmt.Errorf("session: content suite: %w", err)
		}
	}
	return s, nil
}

// checkUpgrade refuses a half-upgraded vault (ErrUpgradeIncomplete). A
// marker beside a config that has the features already is a last step
// lost to a crash: the content is complete, the vault opens. A marker
// beside a bound config without FileRoots is an upgrade adding roots,
// interrupted: some files have roots, which that config does not read.
//
// Only a marker this vault wrote counts (its tag verifies under the
// master key, keys.UpgradeMarkerTag): one planted by whoever writes
// CIPHERDIR, copied from another vault, or left by a build before the
// tag (16 bytes) does not block the vault (issue 18, L3). So the check
// runs after the unlock, with the config's current key.
func (o Options) checkUpgrade(dir string, c *config.Config, master []byte) error {
	if o.Upgrading || upgraded(c.Params) {
		return nil
	}
	rootfd, err := backing.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer backing.Close(rootfd)
	m, err := readMarker(rootfd)
	if err != nil || m == nil {
		return err
	}
	if m.authentic(master) {
		return ErrUpgradeIncomplete
	}
	return nil
}

// UpgradeProgress is how far UpgradeContent is: objects (files and
// directories) and backing bytes converted, of the totals found by its
// scan.
type UpgradeProgress struct {
	Objects, TotalObjects int64
	Bytes, TotalBytes     int64
}

// UpgradeResult says what UpgradeContent did.
type UpgradeResult struct {
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
	// layout into the compact one (upgrade_compact.go), Rerooted the
	// DIRTY files among them re-rooted first.
	Compacted, Rerooted int
	// Skipped counts the entries left as they are: names that do not
	// decrypt, and conflict copies hidden by another entry of the same
	// displayed name (docs/format.md §14, "Upgrading").
	Skipped int
}

// UpgradeContent adds location binding and file roots to the vault of s
// (roots alone to a bound vault), which must have
// been opened with OpenWith (it needs the master key and the config) and
// Options.Upgrading; afterwards s is stale: close it and open the vault
// again. progress (may be nil) is called as objects are converted.
func (s *Session) UpgradeContent(progress func(UpgradeProgress)) (UpgradeResult, error) {
	s.mu.Lock()
	ring := s.ring
	s.mu.Unlock()
	if ring == nil {
		return UpgradeResult{}, ErrNoKeyring
	}
	if !ring.cfg.IsV2() {
		return UpgradeResult{}, config.ErrNotV2
	}
	rootfd, err := backing.OpenRoot(s.dir)
	if err != nil {
		return UpgradeResult{}, err
	}
	defer backing.Close(rootfd)
	m, err := readMarker(rootfd)
	if err != nil {
		return UpgradeResult{}, err
	}
	if upgraded(ring.cfg.Params) {
		return UpgradeResult{AlreadyBound: true, VaultID: ring.cfg.Params.VaultID}, s.removeMarker(rootfd)
	}
	// A marker is resumed from when this vault wrote it (its tag), or,
	// without a tag, when a build before the tag did: such a VaultID is
	// only kept if objects an interrupted run converted verify under it
	// (below); one planted in CIPHERDIR names nothing converted, and is
	// replaced by a random VaultID of this run.
	legacy := m != nil && m.tag == nil
	var marked []byte
	if m.authentic(ring.master) || legacy {
		marked = m.vid
	}
	res := UpgradeResult{Resumed: marked != nil, VaultID: marked}
	switch {
	case ring.cfg.Params.Bound():
		// Bound already (without roots): the VaultID stays. A marker
		// holds the same one (written by this step's earlier run).
		res.VaultID = ring.cfg.Params.VaultID
		if marked != nil && !bytes.Equal(marked, res.VaultID) {
			if !legacy {
				return res, fmt.Errorf("%w: %s names another VaultID than the config", tree.ErrCorruptDir, config.UpgradeMarkerName)
			}
			marked, res.Resumed = nil, false
		}
	case marked == nil:
		if res.VaultID, err = s.newVaultID(); err != nil {
			return res, err
		}
	}
	bound, err := ring.cfg.Params.WithBoundLocations(res.VaultID)
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
	// converted by the compact step (upgrade_compact.go).
	p, err := rooted.WithFeature(config.FlagCompactRoots)
	if err != nil {
		return res, err
	}
	// FreshnessOff: the upgrade's sessions only read and write objects;
	// a vault with freshness keeps its records as they are. After a
	// revoke (§3b) both need every epoch's keys: objects keep the epoch
	// they record (a converted header keeps its epoch field).
	o, err := Options{Backing: s.fs, Rand: s.rand, FreshnessUse: FreshnessOff}.withEpochs(ring.cfg, ring.master)
	if err != nil {
		return res, err
	}
	defer o.wipeEpochs()
	b, err := New(s.dir, p, ring.master, o)
	if err != nil {
		return res, err
	}
	defer b.Close()
	old, err := New(s.dir, rooted, ring.master, o)
	if err != nil {
		return res, err
	}
	defer old.Close()
	unrooted, err := unrootedSuite(p, append(slices.Clone(o.epochs), ring.master))
	if err != nil {
		return res, err
	}
	defer unrooted.Wipe()
	u := &upgrader{v1: s, b: b, rootfd: rootfd, unrooted: unrooted}
	if err := u.scan(); err != nil {
		return res, err
	}
	if legacy && marked != nil && !ring.cfg.Params.Bound() && !u.anyConverted() {
		// An untagged marker that no converted object vouches for:
		// planted, or an old build's run interrupted before it
		// converted anything. Start afresh with a VaultID of this run.
		if err := s.removeMarker(rootfd); err != nil {
			return res, err
		}
		return s.UpgradeContent(progress)
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
	hadRoots := ring.cfg.Params.Has(config.FlagFileRoots)
	if hadRoots {
		err := compact.prepare()
		res.Rerooted = compact.rerooted
		if err != nil {
			return res, err
		}
	}
	if !m.authentic(ring.master) || !bytes.Equal(m.vid, res.VaultID) {
		// (Re)written with this build's tag, before any object changes.
		if err := s.writeMarker(rootfd, res.VaultID, ring.master); err != nil {
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
		s.fs.Unlinkat(rootfd, config.FileName+".tmp", 0)
	}
	// The flags and the VaultID last: every object is v2 with a root
	// and durable.
	if err := s.editConfig(func(c *config.Config, master []byte) error {
		up, err := c.UpgradeParams(master, p, s.rand)
		if err != nil {
			return err
		}
		*c = *up
		return nil
	}); err != nil {
		return res, err
	}
	return res, s.removeMarker(rootfd)
}

// newVaultID draws a VaultID for the vault being upgraded.
func (s *Session) newVaultID() ([]byte, error) {
	vid := make([]byte, config.VaultIDSize)
	if _, err := io.ReadFull(s.rand, vid); err != nil {
		return nil, fmt.Errorf("session: random VaultID: %w", err)
	}
	return vid, nil
}

// markerTemp is the temporary name the marker is written under.
const markerTemp = config.UpgradeMarkerName + ".tmp"

// marker is CIPHERDIR's encryptfs.upgrade: the VaultID the upgrade
// binds with and its tag (keys.UpgradeMarkerTag); a marker of a build
// before the tag holds the VaultID alone (tag nil).
type marker struct {
	vid, tag []byte
}

// authentic reports whether m's tag verifies under master.
func (m *marker) authentic(master []byte) bool {
	if m == nil || m.tag == nil {
		return false
	}
	want, err := keys.UpgradeMarkerTag(master, m.vid)
	return err == nil && hmac.Equal(want[:], m.tag)
}

// readMarker returns CIPHERDIR's encryptfs.upgrade, or nil if there is
// none or it is not a marker at all (any other size): nothing this
// vault wrote, so nothing to resume or to refuse the vault for.
func readMarker(rootfd int) (*marker, error) {
	b, err := backing.ReadFileAt(rootfd, config.UpgradeMarkerName, config.VaultIDSize+keys.UpgradeMarkerTagSize)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, backing.ErrTooBig), errors.Is(err, backing.ErrNotRegular), errors.Is(err, unix.ELOOP):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("session: read %s: %w", config.UpgradeMarkerName, err)
	case len(b) == config.VaultIDSize:
		return &marker{vid: b}, nil
	case len(b) == config.VaultIDSize+keys.UpgradeMarkerTagSize:
		return &marker{vid: b[:config.VaultIDSize], tag: b[config.VaultIDSize:]}, nil
	}
	return nil, nil
}

// writeMarker makes encryptfs.upgrade (the VaultID and its tag under
// master) durable before any object changes: written under a temporary
// name and fsynced, renamed, and the root fsynced, so that a crash
// leaves no marker or a whole one.
func (s *Session) writeMarker(rootfd int, vid, master []byte) error {
	tag, err := keys.UpgradeMarkerTag(master, vid)
	if err != nil {
		return err
	}
	s.fs.Unlinkat(rootfd, markerTemp, 0)
	if err := s.fs.WriteFileAt(rootfd, markerTemp, append(slices.Clone(vid), tag[:]...), 0o400); err != nil {
		return fmt.Errorf("session: write %s: %w", config.UpgradeMarkerName, err)
	}
	if err := s.fs.Renameat2(rootfd, markerTemp, rootfd, config.UpgradeMarkerName, 0); err != nil {
		return fmt.Errorf("session: write %s: %w", config.UpgradeMarkerName, err)
	}
	return s.fs.Fsync(rootfd)
}

// removeMarker removes encryptfs.upgrade once the config is written (and
// a temporary of it that a crash left).
func (s *Session) removeMarker(rootfd int) error {
	s.fs.Unlinkat(rootfd, markerTemp, 0)
	if err := s.fs.Unlinkat(rootfd, config.UpgradeMarkerName, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("session: remove %s: %w", config.UpgradeMarkerName, err)
	}
	return s.fs.Fsync(rootfd)
}
