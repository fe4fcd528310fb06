package cli

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/cobra"
)

// infoJSON is the --json output of info. It holds no secret (no salt, no
// wrapped key): it is safe to paste into a bug report.
type infoJSON struct {
	FormatVersion int
	Creator       string
	Cipher        string
	ChunkSize     int
	KDF           struct {
		Algorithm string
		Time      uint32
		MemoryKiB uint32
		Threads   uint8
	}
	FeatureFlags []string
	// VaultID is the hex VaultID of a vault with location binding.
	VaultID string `json:",omitempty"`
	// FreshnessStateDir is this machine's default freshness state
	// directory of a vault with the feature flag Freshness (a mount's
	// --state-dir may choose another).
	FreshnessStateDir string `json:",omitempty"`
	// Reverse is true for a PLAINDIR's reverse-mode config. (The stored
	// Params.Reverse stays false there, see initReverse; this field says
	// which kind of directory was read.)
	Reverse bool
	// Slots are a format-2 vault's key slots (KDF above is then zero:
	// each password slot has its own). What the file says: info does not
	// unlock (key list --verify does).
	Slots []slotJSON `json:",omitempty"`
}

func newInfoCommand(a *App) *cobra.Command {
	cmd := newCommand("info", "CIPHERDIR", 1, 1, groupVault, "show a vault's parameters (no secrets)", dirArg)
	fs := cmd.Flags()
	asJSON := fs.Bool("json", false, "print JSON")
	flagGroup(fs, groupOutput, "json")
	reverse := fs.Bool("reverse", false, "read the reverse-mode config of a PLAINDIR set up with init --reverse (found without the flag too)")
	flagGroup(fs, groupReverse, "reverse")
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		c, isReverse, err := a.loadAnyConfig(pos[0], *reverse)
		if err != nil {
			return err
		}
		p := c.Params
		if *asJSON {
			var out infoJSON
			out.FormatVersion, out.Creator, out.Cipher, out.ChunkSize = p.FormatVersion, c.Creator, p.Cipher, p.ChunkSize
			out.KDF.Algorithm, out.KDF.Time, out.KDF.MemoryKiB, out.KDF.Threads = p.KDF.Algorithm, p.KDF.Time, p.KDF.MemoryKiB, p.KDF.Threads
			out.FeatureFlags, out.Reverse = p.FeatureFlags, p.Reverse || isReverse
			out.VaultID = hex.EncodeToString(p.VaultID)
			if p.Has(session.FlagFreshness) {
				out.FreshnessStateDir = session.FreshnessStateDir("", p)
			}
			if c.IsV2() {
				out.Slots = slotsJSON(keyslot.List(c))
			}
			b, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "%s\n", escapeJSONForTerminal(b))
			return nil
		}
		fmt.Fprintf(a.Stdout, "Format version: %d\n", p.FormatVersion)
		// The Creator is unauthenticated (anyone who can write CIPHERDIR can
		// set it): quoted if it could send terminal escapes or disguise lines.
		fmt.Fprintf(a.Stdout, "Creator:        %s\n", displayName(c.Creator))
		fmt.Fprintf(a.Stdout, "Cipher:         %s\n", p.Cipher)
		fmt.Fprintf(a.Stdout, "Chunk size:     %d bytes\n", p.ChunkSize)
		if c.IsV2() {
			fmt.Fprintf(a.Stdout, "KDF:            per password slot (below)\n")
		} else {
			fmt.Fprintf(a.Stdout, "KDF:            %s, time %d, memory %d MiB, threads %d\n",
				p.KDF.Algorithm, p.KDF.Time, p.KDF.MemoryKiB/1024, p.KDF.Threads)
		}
		fmt.Fprintf(a.Stdout, "Feature flags:  %s\n", strings.Join(p.FeatureFlags, " "))
		if p.VaultID != nil {
			fmt.Fprintf(a.Stdout, "Vault ID:       %s (location binding)\n", hex.EncodeToString(p.VaultID))
		}
		if p.Has(session.FlagFreshness) {
			// Where this machine keeps what it saw of the vault (by
			// default): encryptfs freshness status checks it.
			fmt.Fprintf(a.Stdout, "Freshness:      on; this machine's state in %s (default)\n", session.FreshnessStateDir("", p))
		}
		fmt.Fprintf(a.Stdout, "Reverse mode:   %t\n", p.Reverse || isReverse)
		if c.IsV2() {
			fmt.Fprintf(a.Stdout, "Key slots (as encryptfs.conf says; encryptfs key list --verify authenticates them):\n")
			for _, si := range keyslot.List(c) {
				fmt.Fprintf(a.Stdout, "  %s\n", describeSlot(si))
			}
		}
		return nil
	}
	return cmd
}
