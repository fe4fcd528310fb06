package cli

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

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

// escapeJSONForTerminal replaces every non-printable rune in JSON text by
// its \uXXXX escape. encoding/json already escapes control characters but
// not, for example, U+202E; such runes can only be inside strings, where
// the escape means the same character, so the JSON stays equivalent.
func escapeJSONForTerminal(b []byte) []byte {
	var out []byte
	for _, r := range string(b) {
		switch {
		case r == '\n' || r == ' ' || unicode.IsGraphic(r):
			out = utf8.AppendRune(out, r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, "\\u%04x\\u%04x", r1, r2)
		default:
			out = fmt.Appendf(out, "\\u%04x", r)
		}
	}
	return out
}

// loadAnyConfig loads dir's config: the reverse-mode one with reverse,
// else the forward one, or, when dir has none, a reverse-mode one after all
// (with a note on stderr). isReverse tells which was read.
func (a *App) loadAnyConfig(dir string, reverse bool) (c *session.Config, isReverse bool, err error) {
	if reverse {
		c, err = a.loadReverseConfig(dir)
		return c, err == nil, err
	}
	c, err = a.loadConfig(dir)
	if errors.Is(err, session.ErrConfigNotFound) {
		if rc, rerr := a.loadReverseConfig(dir); rerr == nil {
			fmt.Fprintf(a.Stderr, "encryptfs: %s is set up for reverse mode (%s)\n", dir, session.ReverseConfigFileName)
			return rc, true, nil
		}
	}
	return c, false, err
}

// loadConfig loads CIPHERDIR's config with the CIPHERDIR problems told
// apart: missing directory, not a vault, corrupt config (including one
// that is not a regular file or too large, see config.ReadFile). Unlocking
// it is limited to the memory this machine has (limitKDFMemory).
func (a *App) loadConfig(dir string) (*session.Config, error) {
	if err := checkDir(dir, ExitCipherDir, "CIPHERDIR"); err != nil {
		return nil, err
	}
	c, err := session.LoadConfig(dir)
	if err != nil {
		return nil, configLoadError(dir, err)
	}
	a.limitKDFMemory(c)
	return c, nil
}

// configLoadError says what is wrong with dir's encryptfs.conf, and what
// to do, in one sentence.
func configLoadError(dir string, err error) error {
	switch {
	case errors.Is(err, session.ErrConfigNotFound):
		return reword(err, "%s has no encryptfs.conf, so it is not a vault (wrong directory? encryptfs init DIR makes a vault in an empty directory)", dir)
	case errors.Is(err, session.ErrConfigCorrupt):
		detail := strings.TrimPrefix(err.Error(), session.ErrConfigCorrupt.Error())
		detail = strings.TrimPrefix(detail, ": ")
		return reword(err, "%s is corrupt or was edited (%s); put back a copy of this vault's encryptfs.conf from a backup", filepath.Join(dir, session.ConfigFileName), withoutInternalPrefixes(detail))
	}
	return fmt.Errorf("%s: %w", dir, err)
}
