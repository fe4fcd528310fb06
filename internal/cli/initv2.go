package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
)

// initFeatures are init's choices for a format-2 vault: a recovery slot,
// and the optional features on top of location binding (always on).
type initFeatures struct {
	recovery, fileRoots, compactRoots, trimmedLeaves, freshness bool
}

// runInitV2 makes a format-2 vault (docs/format.md §3a): a password slot
// ("password") and, with recovery, a recovery slot ("recovery") whose
// paper key is shown once, where format 1 showed the master key. Why a
// recovery slot rather than the master key: it opens the vault the same
// way (mount --masterkey) but can be revoked (key remove) without
// re-encrypting anything.
func runInitV2(a *App, dir, cipherName, chunk string, kf kdfFlags, src passSource, ft initFeatures) error {
	recovery := ft.recovery
	alg, ok := cipherNames[cipherName]
	if !ok {
		return usageErrorf("init: unknown cipher %q (use aes-gcm or xchacha)", cipherName)
	}
	chunkSize, err := parseSize(chunk)
	if err != nil {
		return usageErrorf("init: --chunk-size: %v", err)
	}
	k, err := kf.params(a.Rand, a.defaultKDF())
	if err != nil {
		return err
	}
	// Location binding (docs/format.md §14) is on for every new format-2
	// vault: its VaultID is drawn here, with the rest of the randomness.
	vaultID := make([]byte, session.VaultIDSize)
	if _, err := io.ReadFull(a.Rand, vaultID); err != nil {
		return fmt.Errorf("init: random VaultID: %w", err)
	}
	// So are file roots (§16) and freshness (§15), which need the
	// binding: a new vault's first mount records it.
	p, err := session.NewParamsV2(string(alg), chunkSize).WithBoundLocations(vaultID)
	if err == nil && ft.fileRoots {
		p, err = p.WithFeature(session.FlagFileRoots)
		if err == nil && ft.compactRoots {
			// The compact layout (§16): a small file pays no tag block.
			p, err = p.WithFeature(session.FlagCompactRoots)
		}
		if err == nil && ft.trimmedLeaves {
			// Roots that hash the entries a file has, not 4 KiB (§16).
			p, err = p.WithFeature(session.FlagTrimmed)
		}
	}
	if err == nil && ft.freshness {
		p, err = p.WithFeature(session.FlagFreshness)
		if err == nil {
			// Its manifests in buckets (§15): a block per 256th of the
			// directories, not one per directory.
			p, err = p.WithFeature(session.FlagBuckets)
		}
	}
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("init: %w", err))
	}
	created, err := prepareEmptyDir("init", "CIPHERDIR", dir)
	if err != nil {
		return err
	}
	interrupt := a.removeOnInterrupt(dir, created)
	defer interrupt.stop()
	pw, err := a.readPassword(src, "New password", true)
	if err != nil {
		return interrupt.fail(err)
	}
	defer clear(pw)
	slots := []keyslot.NewSlot{{Type: session.SlotPassword, Label: "password", Password: pw, KDF: k}}
	var recoveryKey []byte
	if recovery {
		if recoveryKey, err = keyslot.NewRecoveryKey(a.Rand); err != nil {
			return interrupt.fail(err)
		}
		defer clear(recoveryKey)
		slots = append(slots, keyslot.NewSlot{Type: session.SlotRecovery, Label: "recovery", RecoveryKey: recoveryKey})
	}
	// The same creation path as format 1 (session.Create): a failed step
	// leaves dir empty again, so that init can be retried.
	interrupt.mu.Lock()
	s, masterKey, err := session.CreateWith(dir, slots, session.CreateOptions{
		Params: p, Creator: creator, Options: session.Options{Rand: a.Rand},
	})
	interrupt.mu.Unlock()
	if err != nil {
		return interrupt.fail(fmt.Errorf("init: %w", err))
	}
	clear(masterKey)
	s.Close()
	fmt.Fprintf(a.Stdout, "Created vault %s (format 2, %s, %d-byte chunks; key slot 1: password, Argon2id t=%d m=%d MiB p=%d).\n",
		dir, p.Cipher, p.ChunkSize, k.Time, k.MemoryKiB/1024, k.Threads)
	fmt.Fprintln(a.Stdout, "location binding: on (a file or directory moved to another name in CIPHERDIR reads as an I/O error)")
	fmt.Fprintln(a.Stdout, onOff(ft.freshness, "freshness", "rollback and deletion by the storage are reported; --freshness=false to turn off"))
	rootsCost := "a 4 KiB tag block per non-empty file"
	if ft.compactRoots {
		rootsCost = "compact: no tag block for a file of one chunk, 256 bytes up to 16 chunks, 4 KiB per 256 chunks beyond"
	}
	fmt.Fprintln(a.Stdout, onOff(ft.fileRoots, "file roots", rootsCost+"; --file-roots=false to turn off"))
	if recovery {
		printRecoveryKey(a.Stdout, recoveryKey, 2)
	}
	fmt.Fprintf(a.Stdout, "Mount it with: encryptfs mount %s MOUNTPOINT\n", dir)
	return nil
}

// printRecoveryKey shows a recovery key once, with the warning that goes
// with it (the wording of printMasterKey, which users know).
func printRecoveryKey(w io.Writer, key []byte, slotID int) {
	fmt.Fprintf(w, `
Your recovery key (the way in if the password is lost):

%s

Write it on paper and keep it somewhere safe, away from this computer.
Anyone who has it can decrypt the vault without the password. It is shown
only now. To use it: encryptfs mount --recovery-key / encryptfs passwd
--recovery-key (asked for on the terminal, or read from stdin). It is key
slot %d: encryptfs key remove revokes it.

`, keyslot.FormatPaperKey(key), slotID)
}

// onOff is init's line for an optional feature: what it costs or does
// when on, and how it was turned off otherwise.
func onOff(on bool, name, what string) string {
	if on {
		return fmt.Sprintf("%s: on (%s)", name, what)
	}
	return fmt.Sprintf("%s: off (--%s=false)", name, strings.ReplaceAll(name, " ", "-"))
}
