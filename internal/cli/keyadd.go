package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/cobra"
)

// newKeyfileSize is the size of a keyfile key add --new-keyfile makes: 32
// random bytes are a 256-bit key (the slot runs HKDF, not Argon2id, over
// it, so it must be random itself).
const newKeyfileSize = 32

// keyAddFlags describe the slot key add makes.
type keyAddFlags struct {
	typ        string
	label      string
	recipients []string // -r, repeatable
	rcptFiles  []string // -R, repeatable; "-" is stdin
	newKeyfile string
	recovery   bool
	newSrc     passSource
	kdf        kdfFlags
}

// slotType is the type asked for: --type, or what the other flags imply
// (--recipient, --recipients-file: age, --new-keyfile: keyfile,
// --recovery: recovery), else password. Contradictions are usage errors.
func (f keyAddFlags) slotType() (string, error) {
	var implied []string
	if len(f.recipients) > 0 || len(f.rcptFiles) > 0 {
		implied = append(implied, session.SlotAge)
	}
	if f.newKeyfile != "" {
		implied = append(implied, session.SlotKeyfile)
	}
	if f.recovery {
		implied = append(implied, session.SlotRecovery)
	}
	if f.newSrc != (passSource{}) {
		implied = append(implied, session.SlotPassword)
	}
	if len(implied) > 1 {
		return "", usageErrorf("key add: one slot at a time: --recipient, --new-keyfile, --recovery and --new-passfile/--new-extpass make different kinds")
	}
	typ := f.typ
	switch {
	case typ == "" && len(implied) == 1:
		typ = implied[0]
	case typ == "":
		typ = session.SlotPassword
	case len(implied) == 1 && implied[0] != typ:
		return "", usageErrorf("key add: --type %s does not go with the flags of a %s slot", typ, implied[0])
	}
	switch typ {
	case session.SlotAge:
		if len(f.recipients) == 0 && len(f.rcptFiles) == 0 {
			return "", usageErrorf("key add: an age slot needs -r RECIPIENT (age1..., ssh-ed25519 ..., or a plugin's such as age1yubikey1...) or -R FILE")
		}
	case session.SlotKeyfile:
		if f.newKeyfile == "" {
			return "", usageErrorf("key add: a keyfile slot needs --new-keyfile FILE")
		}
	case session.SlotPassword, session.SlotRecovery:
	default:
		return "", usageErrorf("key add: --type %q: use password, keyfile, age or recovery", typ)
	}
	return typ, nil
}

func newKeyAddCommand(a *App) *cobra.Command {
	cmd := newCommand("add", "CIPHERDIR", 1, 1, "", "add a key slot: password, keyfile, age recipient (hardware keys through age plugins) or recovery key", dirArg)
	fs := cmd.Flags()
	var u unlockFlags
	u.register(fs, "password")
	var f keyAddFlags
	fs.StringVar(&f.typ, "type", "", "the new slot's type: password, keyfile, age or recovery (default: implied by the flags below, else password)")
	fs.StringVar(&f.label, "label", "", "the new slot's `LABEL` (printable, at most 64 bytes; default: its type, numbered if taken: \"password 2\")")
	fs.StringArrayVarP(&f.recipients, "recipient", "r", nil, "age slot: seal it to `RECIPIENT`: age1..., age1pq1..., an SSH public key (\"ssh-ed25519 AAAA...\", ssh-rsa), or a plugin's (age1yubikey1..., age1tpm1..., age1fido2-hmac1...); repeatable, one slot each")
	fs.StringArrayVarP(&f.rcptFiles, "recipients-file", "R", nil, "age slots: one for each recipient in `FILE` (- for stdin), one per line, # comments, as age -R (repeatable)")
	fs.StringVar(&f.newKeyfile, "new-keyfile", "", "keyfile slot: the keyfile `FILE`; made (32 random bytes, mode 0400) if it does not exist")
	fs.BoolVar(&f.recovery, "recovery", false, "recovery slot: make a recovery key and print it once")
	fs.StringVar(&f.newSrc.passfile, "new-passfile", "", "password slot: read the new password from the first line of `FILE`")
	fs.StringVar(&f.newSrc.extpass, "new-extpass", "", "password slot: run `CMD` (split on spaces, no shell) and use its first output line as the new password")
	mustMark(cobra.MarkFlagFilename(fs, "new-keyfile"))
	mustMark(cobra.MarkFlagFilename(fs, "recipients-file"))
	mustMark(cobra.MarkFlagFilename(fs, "new-passfile"))
	flagGroup(fs, "New slot", "type", "label", "recipient", "recipients-file", "new-keyfile", "recovery", "new-passfile", "new-extpass")
	f.kdf.register(fs)
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		return runKeyAdd(a, pos[0], u, f)
	}
	return cmd
}

// runKeyAdd unlocks dir with any credential and adds one slot, or one age
// slot per recipient.
func runKeyAdd(a *App, dir string, u unlockFlags, f keyAddFlags) error {
	typ, err := f.slotType()
	if err != nil {
		return err
	}
	ns := keyslot.NewSlot{Type: typ, Label: f.label}
	if typ == session.SlotPassword {
		if ns.KDF, err = f.kdf.params(a.Rand, a.defaultKDF()); err != nil {
			return err
		}
	} else if f.kdf != (kdfFlags{}) {
		return usageErrorf("key add: the --kdf-* costs are for password slots")
	}
	// The recipients are read and checked before anything is asked.
	var recipients []string
	if typ == session.SlotAge {
		if recipients, err = keyAddRecipients(a, u, f); err != nil {
			return err
		}
	}
	c, err := a.loadConfig(dir)
	if err != nil {
		return err
	}
	if !c.IsV2() {
		return withCode(ExitUnsupported, fmt.Errorf("%s: %w", dir, session.ErrNotV2))
	}
	if typ == session.SlotPassword {
		if err := c.CheckKDFMemory(ns.KDF.MemoryKiB); err != nil {
			return fmt.Errorf("key add: %w (choose a smaller --kdf-memory)", err)
		}
	}
	var newFile string // a keyfile made here, removed again if the slot is not added
	if typ == session.SlotKeyfile {
		if ns.Keyfile, newFile, err = keyfileFor(a, dir, f.newKeyfile); err != nil {
			return err
		}
		defer clear(ns.Keyfile)
	}
	added := false
	defer func() {
		if newFile != "" && !added {
			os.Remove(newFile)
		}
	}()
	s, err := a.unlockVault(dir, c, u, unlockExistingPrompt)
	if err != nil {
		return err
	}
	defer s.Close()
	switch typ {
	case session.SlotPassword:
		if ns.Password, err = a.readPassword(f.newSrc, "New password for the new slot", true); err != nil {
			return err
		}
		defer clear(ns.Password)
	case session.SlotRecovery:
		if ns.RecoveryKey, err = keyslot.NewRecoveryKey(a.Rand); err != nil {
			return err
		}
		defer clear(ns.RecoveryKey)
	case session.SlotAge:
		ns.UI = a.pluginUI()
	}
	existing, err := s.Slots()
	if err != nil {
		return err
	}
	slots := []keyslot.NewSlot{ns}
	if typ == session.SlotAge {
		slots = slots[:0]
		for _, r := range recipients {
			n := ns
			n.Recipient = r
			slots = append(slots, n)
		}
	}
	labelSlots(slots, existing, f.label != "")
	ids, err := s.AddSlots(slots)
	if err != nil {
		return addSlotError(err)
	}
	added = true
	for i, id := range ids {
		fmt.Fprintf(a.Stdout, "Added key slot %d (%s, label %q).\n", id, typ, slots[i].Label)
	}
	switch {
	case newFile != "":
		fmt.Fprintf(a.Stdout, "Wrote the new keyfile %s (%d random bytes, mode 0400): keep it like a password.\n", newFile, newKeyfileSize)
	case typ == session.SlotRecovery:
		printRecoveryKey(a.Stdout, ns.RecoveryKey, ids[0])
	}
	return nil
}

// unlockExistingPrompt is the password prompt of the key commands, which
// unlock with a slot the vault has before changing its slots.
const unlockExistingPrompt = "Password of an existing key slot (to unlock)"

// keyAddRecipients gathers the recipients of -r and -R, in order, each
// checked (ParseRecipient; a plugin's is only parsed here, its plugin runs
// when the slot is sealed).
func keyAddRecipients(a *App, u unlockFlags, f keyAddFlags) ([]string, error) {
	out := slices.Clone(f.recipients)
	for i, r := range out {
		out[i] = strings.TrimSpace(r)
		if strings.ContainsRune(out[i], '\n') {
			return nil, usageErrorf("key add: -r takes one recipient (several: -r again, or -R FILE)")
		}
		// A plugin recipient is only parsed: its plugin runs on sealing.
		if _, err := keyslot.ParseRecipient(out[i], nil); err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("key add: -r: %w", err))
		}
	}
	for _, path := range f.rcptFiles {
		var data []byte
		var err error
		if path == "-" {
			if slices.Contains(u.identities, "-") || u.masterKey || !u.nonStdinUnlock() {
				return nil, usageErrorf("key add: -R - reads stdin, so unlock with --passfile, --extpass, --keyfile, -i FILE or --credential")
			}
			data, err = a.readStdinAll(keyslot.MaxRecipientsFile)
		} else {
			data, err = readSmallFile(path, keyslot.MaxRecipientsFile)
		}
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("key add: -R: %w", err))
		}
		rs, err := keyslot.ParseRecipientsFile(data)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("key add: -R %s: %w", displayName(path), err))
		}
		out = append(out, rs...)
	}
	if len(out) > session.MaxSlots {
		return nil, errorfCode(ExitKeySlot, "key add: %d recipients, and a vault holds at most %d key slots", len(out), session.MaxSlots)
	}
	return out, nil
}

// labelSlots gives each new slot its label: the one given (--label), else
// its kind (the slot type; for an SSH recipient its key type), numbered
// when a slot already has it ("password", "password 2", ...), so that
// slots of one kind can be told apart in key list. Several new slots with
// one --label are numbered the same way.
func labelSlots(slots []keyslot.NewSlot, existing []keyslot.Info, given bool) {
	taken := map[string]bool{}
	for _, si := range existing {
		taken[si.Label] = true
	}
	for i := range slots {
		base := slots[i].Label
		if !given {
			base = slots[i].Type
			if t, _, ok := strings.Cut(slots[i].Recipient, " "); ok && strings.HasPrefix(t, "ssh-") {
				base = t
			}
		}
		label := base
		if taken[label] && (!given || len(slots) > 1) {
			for n := 2; taken[label]; n++ {
				label = fmt.Sprintf("%s %d", base, n)
			}
		}
		slots[i].Label = label
		taken[label] = true
	}
}

// addSlotError gives key add's refusals their line and code.
func addSlotError(err error) error {
	switch {
	case errors.Is(err, keyslot.ErrRecipient), errors.Is(err, keyslot.ErrLabel):
		return withCode(ExitUsage, fmt.Errorf("key add: %w", err))
	case errors.Is(err, session.ErrSlotLimit):
		return errorfCode(ExitKeySlot, "key add: the vault has the most key slots it can hold (%d); remove one first", session.MaxSlots)
	}
	return fmt.Errorf("key add: %w", err)
}

// keyfileFor reads the keyfile path, or makes it (newKeyfileSize random
// bytes, mode 0400, never overwriting: O_EXCL) when it does not exist.
// A new keyfile must not be inside the vault: a sync of CIPHERDIR would
// carry the key along with what it opens. made is the path if made here.
func keyfileFor(a *App, dir, path string) (key []byte, made string, err error) {
	if _, err := os.Lstat(path); err == nil {
		k, err := keyslot.ReadKeyfile(path)
		if err != nil {
			return nil, "", withCode(ExitPassword, err)
		}
		return k, "", nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, "", withCode(ExitPassword, fmt.Errorf("key add: --new-keyfile: %w", err))
	}
	if inside, err := isInside(dir, filepath.Dir(path)); err != nil {
		return nil, "", usageErrorf("key add: --new-keyfile: %v", err)
	} else if inside {
		return nil, "", usageErrorf("key add: --new-keyfile %s is inside %s; keep keys outside the vault directory", path, dir)
	}
	key = make([]byte, newKeyfileSize)
	if _, err := io.ReadFull(a.Rand, key); err != nil {
		return nil, "", err
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400)
	if err != nil {
		clear(key)
		return nil, "", fmt.Errorf("key add: --new-keyfile: %w", err)
	}
	_, werr := out.Write(key)
	serr := out.Sync()
	cerr := out.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		clear(key)
		os.Remove(path)
		return nil, "", fmt.Errorf("key add: writing %s: %w", path, err)
	}
	return key, path, nil
}

// isInside tells whether the existing directory sub is dir or below it.
func isInside(dir, sub string) (bool, error) {
	absDir, err := resolvedAbs(dir)
	if err != nil {
		return false, err
	}
	absSub, err := resolvedAbs(sub)
	if err != nil {
		return false, err
	}
	rel, err := filepath.Rel(absDir, absSub)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)), nil
}
