package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/cobra"
)

// newKeyCommand is encryptfs key add|list|remove: the key slots of a
// format-2 vault, in the spirit of cryptsetup luksAddKey and
// systemd-cryptenroll.
func newKeyCommand(a *App) *cobra.Command {
	cmd := newCommand("key", "", 0, 0, groupVault, "manage a vault's key slots: add, list, remove (format 2)")
	cmd.Use = "key"
	cmd.Args = func(_ *cobra.Command, pos []string) error {
		if len(pos) == 0 {
			return usageErrorf("key: expected a subcommand: add, list or remove")
		}
		return usageErrorf("key: unknown subcommand %q (add, list or remove)", pos[0])
	}
	cmd.RunE = func(*cobra.Command, []string) error { return nil }
	cmd.AddCommand(newKeyListCommand(a), newKeyAddCommand(a), newKeyRemoveCommand(a))
	return cmd
}

// keyListJSON is the output of key list --json.
type keyListJSON struct {
	// Verified: the vault was unlocked (--verify), so the list is the one
	// the config's MAC authenticates; UnlockedBy is the slot that opened.
	Verified   bool
	UnlockedBy int `json:",omitempty"`
	Slots      []slotJSON
}

func newKeyListCommand(a *App) *cobra.Command {
	cmd := newCommand("list", "CIPHERDIR", 1, 1, "", "list the key slots (ID, type, label, recipient, KDF costs)", dirArg)
	fs := cmd.Flags()
	verify := fs.Bool("verify", false, "unlock the vault (with the unlock flags) so that the list is authenticated, not just what encryptfs.conf says")
	var u unlockFlags
	u.register(fs, "password")
	asJSON := fs.Bool("json", false, "print JSON")
	flagGroup(fs, groupOutput, "json")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		dir := pos[0]
		c, err := a.loadConfig(dir)
		if err != nil {
			return err
		}
		if !c.IsV2() {
			return withCode(ExitUnsupported, fmt.Errorf("%s: %w", dir, session.ErrNotV2))
		}
		if !*verify && unlockFlagsChanged(cmd) {
			return usageErrorf("key list: the unlock flags go with --verify")
		}
		out := keyListJSON{}
		slots := keyslot.List(c)
		if *verify {
			s, err := a.unlockVault(dir, c, u, unlockExistingPrompt)
			if err != nil {
				return err
			}
			defer s.Close()
			if slots, err = s.Slots(); err != nil {
				return err
			}
			out.Verified = true
			out.UnlockedBy, _ = s.UnlockedBy()
		}
		out.Slots = slotsJSON(slots)
		if *asJSON {
			b, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "%s\n", escapeJSONForTerminal(b))
		} else {
			fmt.Fprintf(a.Stdout, " ID  TYPE      LABEL             DETAILS\n")
			for _, si := range slots {
				mark := ""
				if out.Verified && si.ID == out.UnlockedBy {
					mark = "  (unlocked this time)"
				}
				fmt.Fprintf(a.Stdout, "%s%s\n", describeSlot(si), mark)
			}
		}
		if !*verify {
			fmt.Fprintln(a.Stderr, "encryptfs: note: this is what encryptfs.conf says; it is authenticated only when unlocked (key list --verify)")
		}
		return nil
	}
	return cmd
}

func newKeyRemoveCommand(a *App) *cobra.Command {
	cmd := newCommand("remove", "CIPHERDIR ID", 2, 2, "", "remove a key slot (refused for the last one)", dirArg, vaultArg)
	fs := cmd.Flags()
	var u unlockFlags
	u.register(fs, "password")
	revoke := fs.Bool("revoke", false, revokeFlagUsage)
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		dir := pos[0]
		id, err := strconv.Atoi(pos[1])
		if err != nil || id < session.MinSlotID || id > session.MaxSlotID {
			return usageErrorf("key remove: %q is not a key slot ID (a number from %d to %d; see encryptfs key list)", pos[1], session.MinSlotID, session.MaxSlotID)
		}
		c, err := a.loadConfig(dir)
		if err != nil {
			return err
		}
		if !c.IsV2() {
			return withCode(ExitUnsupported, fmt.Errorf("%s: %w", dir, session.ErrNotV2))
		}
		s, err := a.unlockVault(dir, c, u, unlockExistingPrompt)
		if err != nil {
			return err
		}
		defer s.Close()
		if *revoke {
			return keyRemoveRevoke(a, dir, c, u, s, id)
		}
		if err := s.RemoveSlot(id); err != nil {
			return slotError("key remove", id, err)
		}
		fmt.Fprintf(a.Stdout, "Removed key slot %d.\n", id)
		if by, _ := s.UnlockedBy(); by == id {
			fmt.Fprintf(a.Stdout, "It was the credential used now: it no longer opens the vault.\n")
		}
		return nil
	}
	return cmd
}

// slotError gives a refused slot change its one line (ExitKeySlot).
func slotError(cmd string, id int, err error) error {
	switch ExitCode(err) {
	case ExitKeySlot:
		if errors.Is(err, session.ErrLastSlot) {
			return errorfCode(ExitKeySlot, "%s: key slot %d is the vault's last one; add another first (encryptfs key add), or nobody could open the vault", cmd, id)
		}
		if errors.Is(err, session.ErrUnknownSlot) {
			return errorfCode(ExitKeySlot, "%s: the vault has no key slot %d (see encryptfs key list)", cmd, id)
		}
	}
	return fmt.Errorf("%s: %w", cmd, err)
}
