package session

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// ErrForgedConfig: an age slot opened, but the master key it gave does not
// decrypt the names in the vault's root. Age recipients are public, so
// whoever can write CIPHERDIR can build a whole new config (slots and MAC
// included) whose age slot, sealed to the user's recipient, holds a key of
// their choosing; files written under it would be theirs to read. The
// vault is refused; nothing is written (docs/format.md §3a).
var ErrForgedConfig = fault.New(fault.CorruptConfig,
	"session: the key an age slot gave does not decrypt the vault's names: the config was replaced (forged), or the root is damaged; open with a password, keyfile or recovery key, or run fsck")

// KeyCheck says how the master key a session was opened with was checked
// against the vault's content.
type KeyCheck int

const (
	// KeyNotChecked: the key came from a secret only its holder has (a
	// password, keyfile or recovery slot, a format-1 password), which the
	// storage cannot forge a slot for; or from the master key itself
	// (the CLI checks that one with CheckMasterKey).
	KeyNotChecked KeyCheck = iota
	// KeyVerified: the key came from an age slot and decrypts the names
	// in the root, none of which failed.
	KeyVerified
	// KeyUnverifiable: the key came from an age slot and the root has no
	// encrypted name to try it on (an empty vault): a forged config
	// cannot be told from the real one. The CLI should warn.
	KeyUnverifiable
)

func (k KeyCheck) String() string {
	switch k {
	case KeyVerified:
		return "verified against the vault's names"
	case KeyUnverifiable:
		return "not verifiable (the vault's root has no names)"
	}
	return "not checked"
}

// keyring is what a session opened through its key slots keeps for key
// management: the config it unlocked and the master key (wiped on Close).
type keyring struct {
	cfg      *config.Config
	onDisk   []byte // the config file's bytes as last read or written
	master   []byte
	slotID   int
	slotType string
	check    KeyCheck
}

// OpenWith unlocks the vault in dir (format 1 or 2) with the credentials
// in cr (keyslot.Unlock: the password callback is called only if needed)
// and keeps its config and master key for key management (AddSlot,
// RemoveSlot, ...). A key that came from an age slot is checked against
// the root's names (ErrForgedConfig; KeyCheck tells the outcome).
func OpenWith(dir string, cr keyslot.Credentials, o Options) (*Session, error) {
	c, err := o.loadConfig(dir, config.FileName)
	if err != nil {
		return nil, err
	}
	if c.Params.Reverse {
		return nil, ErrReverse
	}
	// Before any credential is asked for or tried: a half-upgraded vault
	// is refused whatever opens it.
	r, err := keyslot.Unlock(c, cr)
	if err != nil {
		return nil, err
	}
	s, err := o.openEpochs(dir, c, r.MasterKey)
	if err != nil {
		clear(r.MasterKey)
		return nil, err
	}
	s.ring = &keyring{cfg: c, onDisk: c.Raw(), master: r.MasterKey, slotID: r.SlotID, slotType: r.SlotType}
	if r.SlotType == config.SlotAge {
		if s.ring.check, err = s.checkAgeKey(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// checkAgeKey defends against the forged-config attack (ErrForgedConfig):
// the key must decrypt the root's names. Why no bad name at all, and not
// just one good one: the storage can add a name made under its own key
// beside the real ones; with the real key, a root name that looks like an
// encrypted name (no '.' or space, docs/format.md §2) and fails to
// decrypt is damage, and another credential (or fsck) still opens the
// vault. Foreign names (a sync tool's "x (conflict).txt") do not count.
// An empty root cannot be checked (KeyUnverifiable): a storage that
// deleted every name is indistinguishable from a new vault. Pinning the
// key's fingerprint in local state would close that gap (future work).
func (s *Session) checkAgeKey() (KeyCheck, error) {
	rootfd, err := backing.OpenRoot(s.dir)
	if err != nil {
		return 0, err
	}
	defer backing.Close(rootfd)
	dirID, err := s.tree.DirIDs().ReadRoot(rootfd)
	if errors.Is(err, bind.ErrMisplaced) {
		// With location binding the root's ID file is bound under the
		// real key: a key that does not verify it is not the vault's.
		// (Not the other way round: whoever replaced the config can
		// replace the root's ID file too; the names below still tell.)
		return 0, fmt.Errorf("%w (the root's directory ID is not bound under it)", ErrForgedConfig)
	}
	if err != nil {
		return 0, err
	}
	ents, bad, err := s.tree.List(tree.NewDir(rootfd, dirID, nil))
	if err != nil {
		return 0, err
	}
	for _, b := range bad {
		if !strings.ContainsAny(b.Backing, ". ") {
			return 0, fmt.Errorf("%w (%d of the root's names do not decrypt)", ErrForgedConfig, len(bad))
		}
	}
	if len(ents) == 0 {
		return KeyUnverifiable, nil
	}
	return KeyVerified, nil
}

// ErrNoKeyring: a key management call on a session not opened with
// OpenWith or CreateWith (it has no config and master key kept).
var ErrNoKeyring = errors.New("session: key management needs a session opened with OpenWith or CreateWith")

// KeyCheck tells how the session's master key was checked (OpenWith).
func (s *Session) KeyCheck() KeyCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring == nil {
		return KeyNotChecked
	}
	return s.ring.check
}

// UnlockedBy returns the ID and type of the slot that opened the session
// (0, "" for the master key or a format-1 password).
func (s *Session) UnlockedBy() (id int, typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring == nil {
		return 0, ""
	}
	return s.ring.slotID, s.ring.slotType
}

// Slots lists the vault's key slots (nil for a format-1 vault).
func (s *Session) Slots() ([]keyslot.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring == nil {
		return nil, ErrNoKeyring
	}
	return keyslot.List(s.ring.cfg), nil
}

// AddSlot adds a key slot (any type) and saves the config atomically. It
// returns the new slot's ID.
func (s *Session) AddSlot(ns keyslot.NewSlot) (int, error) {
	var id int
	err := s.editConfig(func(c *config.Config, master []byte) error {
		var err error
		id, err = keyslot.Add(c, master, ns, s.rand)
		return err
	})
	return id, err
}

// AddSlots adds several key slots in one atomic config write (key add
// with several recipients): all of them or, on error, none. It returns
// their IDs in order.
func (s *Session) AddSlots(ns []keyslot.NewSlot) ([]int, error) {
	var ids []int
	err := s.editConfig(func(c *config.Config, master []byte) error {
		ids = ids[:0]
		for _, n := range ns {
			id, err := keyslot.Add(c, master, n, s.rand)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// RemoveSlot removes key slot id and saves the config (config.ErrLastSlot
// for the only slot). Removing the slot the session was opened with is
// allowed: the session keeps working, the credential stops opening.
func (s *Session) RemoveSlot(id int) error {
	return s.editConfig(func(c *config.Config, master []byte) error {
		return keyslot.Remove(c, master, id)
	})
}

// ChangePassword re-wraps the password slot oldPassword opens under
// newPassword with KDF params k (fresh salt) and saves the config; it
// returns the slot's ID.
func (s *Session) ChangePassword(oldPassword, newPassword []byte, k KDFParams) (int, error) {
	var id int
	err := s.editConfig(func(c *config.Config, _ []byte) error {
		var err error
		id, err = keyslot.ChangePassword(c, oldPassword, newPassword, k, s.rand)
		return err
	})
	return id, err
}

// SetPassword re-wraps password slot id under newPassword (a forgotten
// password, after opening with another credential) and saves the config.
func (s *Session) SetPassword(id int, newPassword []byte, k KDFParams) error {
	return s.editConfig(func(c *config.Config, master []byte) error {
		return keyslot.SetPassword(c, master, id, newPassword, k, s.rand)
	})
}

// editConfig runs edit on a copy of the session's config and, if it
// succeeds, saves the copy atomically (config.SaveFS: temp, fsync,
// rename, fsync dir) and makes it the session's. Why a copy: a failed
// edit or save leaves the session's config as it is on disk.
func (s *Session) editConfig(edit func(c *config.Config, master []byte) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		return fmt.Errorf("session: key management: %w", fileengine.ErrClosed)
	}
	if s.ring == nil {
		return ErrNoKeyring
	}
	if !s.ring.cfg.IsV2() {
		return config.ErrNotV2
	}
	// Refuse to overwrite a config changed since it was read (another
	// key add, a passwd, a sync): its change would be lost. Not atomic
	// with the save below; it catches the usual case, two commands one
	// after the other on a session kept open.
	if cur, err := config.ReadFile(s.dir, config.FileName); err != nil {
		return err
	} else if s.ring.onDisk != nil && !bytes.Equal(cur, s.ring.onDisk) {
		return ErrConfigChanged
	}
	next := *s.ring.cfg
	next.Slots = append([]config.Slot(nil), next.Slots...)
	if err := edit(&next, s.ring.master); err != nil {
		return err
	}
	data, err := next.Marshal()
	if err != nil {
		return err
	}
	if err := config.WriteFileAtomicFS(s.fs, s.dir, config.FileName, data); err != nil {
		return err
	}
	*s.ring.cfg = next
	s.ring.onDisk = data
	// This machine now knows the new config (a new epoch after a
	// revoke, the flags an upgrade added): the one from before, put
	// back, is recognised from now on (docs/format.md §15a).
	if err := s.seen.record(&next); err != nil {
		return fmt.Errorf("session: encryptfs.conf is changed, but %w", err)
	}
	return nil
}

// ErrConfigChanged: a key management call found encryptfs.conf changed
// since the session read it; nothing was written. Open the vault again.
var ErrConfigChanged = fault.New(fault.Busy, "session: encryptfs.conf changed since the vault was opened; open it again")

// wipeRing clears the kept master key.
func (s *Session) wipeRing() {
	if s.ring != nil {
		clear(s.ring.master)
		s.ring = nil
	}
}

// Upgrade turns the format-1 vault in dir into a format-2 vault in place
// (keyslot.Upgrade): the same master key, so no file changes; password,
// which must open the v1 config, becomes password slot 1 under KDF params
// k (fresh salt; pass the v1 costs or higher, as passwd does). The new
// config replaces the old atomically (config.SaveFS: temp, fsync, rename,
// fsync dir), so a crash leaves one or the other. A vault that is not
// upgraded keeps opening as format 1. A reverse config is refused
// (config.ErrReverseV2); a format-2 one with config.ErrNotV1.
func Upgrade(dir string, password []byte, k KDFParams, o Options) error {
	c, err := o.loadConfig(dir, config.FileName)
	if err != nil {
		return err
	}
	next, err := keyslot.Upgrade(c, password, k, o.engineOptions().Rand)
	if err != nil {
		return err
	}
	return next.SaveFS(o.Backing, dir)
}
