package session

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"slices"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/fault"
	"golang.org/x/sys/unix"
)

// The content upgrade's marker (internal/upgrade, docs/format.md §14,
// "Upgrading"): CIPHERDIR's encryptfs.upgrade holds the VaultID an
// upgrade binds with and its tag under the master key. The session owns
// it because unlocking reads it: a vault whose upgrade was interrupted is
// refused by every open but the upgrade's (Options.Upgrading), and only
// the session holds the key its tag is checked with.

// ErrUpgradeIncomplete: a content upgrade of the vault was interrupted
// (encryptfs.upgrade exists, the config does not have BoundLocations and
// FileRoots yet):
// the vault holds v1 and v2 objects and is refused until the upgrade is
// run again, which finishes it.
var ErrUpgradeIncomplete = fault.New(fault.UnsupportedVault,
	"session: an upgrade of this vault was interrupted; run `encryptfs upgrade` on it again to finish it")

// Upgraded reports whether a vault with Params p has what the content
// upgrade gives: BoundLocations, FileRoots and CompactRoots.
func Upgraded(p config.Params) bool {
	return p.Bound() && p.Has(config.FlagFileRoots) && p.Has(config.FlagCompactRoots)
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
	if o.Upgrading || Upgraded(c.Params) {
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

// UpgradeMarker is encryptfs.upgrade as the content upgrade needs it.
type UpgradeMarker struct {
	VaultID []byte
	// Tagged: the marker has a tag (a build before the tag wrote none).
	Tagged bool
	// Authentic: its tag verifies under the session's master key, so this
	// vault wrote it.
	Authentic bool
}

// ReadUpgradeMarker reads CIPHERDIR's encryptfs.upgrade (rootfd) and
// checks its tag with the master key the session keeps (OpenWith); nil
// if there is none, or it is no marker at all.
func (s *Session) ReadUpgradeMarker(rootfd int) (*UpgradeMarker, error) {
	m, err := readMarker(rootfd)
	if err != nil || m == nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring == nil {
		return nil, ErrNoKeyring
	}
	return &UpgradeMarker{VaultID: m.vid, Tagged: m.tag != nil, Authentic: m.authentic(s.ring.master)}, nil
}

// WriteUpgradeMarker makes encryptfs.upgrade (vid and its tag under the
// master key the session keeps) durable before any object changes:
// written under a temporary name and fsynced, renamed, and the root
// fsynced (backing.FS.ReplaceFile), so that a crash leaves no marker or
// a whole one.
func (s *Session) WriteUpgradeMarker(rootfd int, vid []byte) error {
	s.mu.Lock()
	ring := s.ring
	var tag [keys.UpgradeMarkerTagSize]byte
	var err error
	if ring != nil {
		tag, err = keys.UpgradeMarkerTag(ring.master, vid)
	}
	s.mu.Unlock()
	switch {
	case ring == nil:
		return ErrNoKeyring
	case err != nil:
		return err
	}
	if err := s.fs.ReplaceFile(rootfd, markerTemp, rootfd, config.UpgradeMarkerName, append(slices.Clone(vid), tag[:]...), 0o400, backing.ReplaceSyncDir); err != nil {
		return fmt.Errorf("session: write %s: %w", config.UpgradeMarkerName, err)
	}
	return nil
}

// RemoveUpgradeMarker removes encryptfs.upgrade once the config is
// written (and a temporary of it that a crash left).
func (s *Session) RemoveUpgradeMarker(rootfd int) error {
	s.fs.Unlinkat(rootfd, markerTemp, 0)
	if err := s.fs.Unlinkat(rootfd, config.UpgradeMarkerName, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("session: remove %s: %w", config.UpgradeMarkerName, err)
	}
	return s.fs.Fsync(rootfd)
}
