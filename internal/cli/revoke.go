package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
)

// --revoke (passwd, key remove): the change also moves the vault to a new
// master-key epoch (docs/format.md §3b), so that a copy of the config
// kept from before, with the old password or the removed credential,
// reads nothing made afterwards. Every remaining slot must be re-wrapped
// to the new key: age slots are re-sealed to their recipient without the
// identity; password, keyfile and recovery slots need their credential,
// which the user gives as for unlocking (revokeSpec).

const revokeFlagUsage = "format 2: also revoke the master key (a new key epoch): a copy of the old config then opens nothing made afterwards. " +
	"Every other key slot is re-wrapped to the new key: age slots need nothing, password, keyfile and recovery slots need their credential (--passfile, --keyfile)"

// revokeSpec adds to spec the credentials u offers again (keyfiles,
// systemd credentials; with askPassword, the password, read again from
// its source) for re-wrapping the slots they open. wipe clears them.
func revokeSpec(a *App, c *session.Config, u unlockFlags, spec keyslot.RevokeSpec, askPassword bool) (keyslot.RevokeSpec, func(), error) {
	u.identities = nil // age slots need no identity; do not prompt for one again
	cr, wipe, err := a.credentials(c, u, "Password (again, to keep its key slot)")
	if err != nil {
		return spec, wipe, err
	}
	spec.Keyfiles, spec.UI = cr.Keyfiles, a.pluginUI()
	if askPassword && cr.Password != nil && hasOtherPasswordSlot(c, spec) {
		pw, err := cr.Password()
		if err != nil {
			return spec, wipe, err
		}
		spec.Passwords = [][]byte{pw}
		inner := wipe
		wipe = func() { inner(); clear(pw) }
	}
	return spec, wipe, nil
}

// hasOtherPasswordSlot tells whether a password slot stays that spec does
// not already give a password for.
func hasOtherPasswordSlot(c *session.Config, spec keyslot.RevokeSpec) bool {
	for _, s := range c.Slots {
		if s.Header.Type == session.SlotPassword && s.Header.ID != spec.Remove && s.Header.ID != spec.PasswordSlot {
			return true
		}
	}
	return false
}

// revokeMasterKey runs s.Revoke and reports it; cmd names the command.
func revokeMasterKey(a *App, cmd string, s *session.Session, spec keyslot.RevokeSpec) error {
	epoch, err := s.Revoke(spec)
	if err != nil {
		return revokeError(cmd, err)
	}
	fmt.Fprintf(a.Stdout, "Master key revoked: the vault is at key epoch %d.\n", epoch)
	fmt.Fprintln(a.Stdout, "Every remaining key slot opens the new key (age slots were re-sealed to their recipients).")
	fmt.Fprintln(a.Stdout, "A copy of the old config still opens what existed before (and names added to directories made before); nothing made from now on.")
	fmt.Fprintln(a.Stdout, "Mounts running now write under the old key until remounted; the master key printed by init no longer opens the vault (use a recovery key: encryptfs key add --recovery).")
	return nil
}

// revokeError gives a refused revoke its one line.
func revokeError(cmd string, err error) error {
	var need *keyslot.NeedsCredentialError
	switch {
	case errors.As(err, &need):
		var slots []string
		for _, si := range need.Slots {
			slots = append(slots, fmt.Sprintf("%d (%s %s)", si.ID, si.Type, displayName(si.Label)))
		}
		return errorfCode(ExitKeySlot, "%s --revoke: every remaining key slot must be re-wrapped to the new master key, and these need their credential: %s; "+
			"give a keyfile slot's file with --keyfile and a password slot's password with --passfile, "+
			"or remove the slot first (encryptfs key remove) and add it again afterwards (a recovery slot always: key add --recovery prints a new key); nothing was changed",
			cmd, strings.Join(slots, ", "))
	case errors.Is(err, session.ErrRevokeUnbound):
		return errorfCode(ExitUnsupported, "%s --revoke: this vault's files do not record a master-key epoch (format-1 content, without location binding), so a revoke would not keep the old key from new files; nothing was changed", cmd)
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// keyRemoveRevoke is key remove ID --revoke: slot id is dropped and the
// master key revoked in one config write.
func keyRemoveRevoke(a *App, dir string, c *session.Config, u unlockFlags, s *session.Session, id int) error {
	if _, _, err := c.SlotByID(id); err != nil {
		return slotError("key remove", id, err)
	}
	if len(c.Slots) == 1 {
		return slotError("key remove", id, session.ErrLastSlot)
	}
	if !s.CanRevoke() { // before a password is read again
		return revokeError("key remove", session.ErrRevokeUnbound)
	}
	spec, wipe, err := revokeSpec(a, c, u, keyslot.RevokeSpec{Remove: id}, true)
	defer wipe()
	if err != nil {
		return err
	}
	if err := revokeMasterKey(a, "key remove", s, spec); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Removed key slot %d.\n", id)
	return nil
}
