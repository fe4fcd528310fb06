package cli

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
)

// passwdV2 is passwd on a format-2 vault: it unlocks with any credential
// and re-wraps one password slot (session.SetPassword): the slot given
// with --slot, else the one the current password opened, else the
// vault's only password slot. The other slots are untouched.
// With revoke the master key is revoked as well (revoke.go): the slot gets
// the new password and the new key, every other slot the new key.
func passwdV2(a *App, dir string, c *session.Config, u unlockFlags, newSrc passSource, kf kdfFlags, slotID int, backup string, revoke bool) error {
	previous := append([]byte(nil), c.Raw()...)
	s, err := a.unlockVault(dir, c, u, "Current password")
	if err != nil {
		return err
	}
	defer s.Close()
	slots, err := s.Slots()
	if err != nil {
		return err
	}
	target, err := passwordSlot(s, slots, slotID)
	if err != nil {
		return err
	}
	if revoke && !s.CanRevoke() { // before the new password is asked for
		return revokeError("passwd", session.ErrRevokeUnbound)
	}
	// As with format 1: a cost not given as a flag keeps the slot's but
	// never drops below the default.
	k, err := kf.params(a.Rand, costsOf(*target.KDF).atLeast(a.defaultKDF()))
	if err != nil {
		return err
	}
	if err := c.CheckKDFMemory(k.MemoryKiB); err != nil {
		return fmt.Errorf("passwd: the new password slot: %w (choose a smaller --kdf-memory)", err)
	}
	pw, err := a.readPassword(newSrc, "New password", true)
	if err != nil {
		return err
	}
	defer clear(pw)
	if backup != "" {
		if err := session.WriteConfigBackup(backup, previous); err != nil {
			return err
		}
	}
	if revoke {
		spec, wipe, err := revokeSpec(a, c, u, keyslot.RevokeSpec{PasswordSlot: target.ID, NewPassword: pw, KDF: k}, false)
		defer wipe()
		if err != nil {
			return err
		}
		if err := revokeMasterKey(a, "passwd", s, spec); err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "Password changed (key slot %d).\n", target.ID)
		noteBackup(a, backup)
		return nil
	}
	if err := s.SetPassword(target.ID, pw, k); err != nil {
		return fmt.Errorf("passwd: %w", err)
	}
	fmt.Fprintf(a.Stdout, "Password changed (key slot %d).\n", target.ID)
	noteBackup(a, backup)
	return nil
}

// passwordSlot picks the password slot passwd changes.
func passwordSlot(s *session.Session, slots []keyslot.Info, want int) (keyslot.Info, error) {
	var passwords []keyslot.Info
	for _, si := range slots {
		if si.Type == session.SlotPassword {
			passwords = append(passwords, si)
		}
	}
	if want == 0 {
		if id, typ := s.UnlockedBy(); typ == session.SlotPassword {
			want = id
		} else if len(passwords) == 1 {
			want = passwords[0].ID
		}
	}
	for _, si := range passwords {
		if si.ID == want {
			return si, nil
		}
	}
	switch {
	case len(passwords) == 0:
		return keyslot.Info{}, errorfCode(ExitKeySlot, "passwd: the vault has no password slot (add one with: encryptfs key add)")
	case want == 0:
		return keyslot.Info{}, usageErrorf("passwd: the vault has %d password slots; choose one with --slot ID (see encryptfs key list)", len(passwords))
	}
	return keyslot.Info{}, errorfCode(ExitKeySlot, "passwd: key slot %d is not a password slot of this vault (see encryptfs key list)", want)
}
