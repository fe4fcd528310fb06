package fresh

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/encryptfs/encryptfs/internal/fault"
)

// A machine's memory of a vault's configs (docs/format.md §15a): the
// highest format version, the feature flags and the highest master-key
// epoch it has opened the vault with, kept outside CIPHERDIR under the
// vault's local ID (keys.LocalID, from K_0, which every config of the
// vault opens). Freshness's manifests and epochs live in CIPHERDIR and
// are only trusted while the config says the vault has them; a config
// put back from before `upgrade` (no Freshness flag: nothing is checked)
// or from before a `--revoke` (the revoked key wraps the master key
// again, and new files would be written under it) is recognised here,
// whatever the config says.

// ErrConfigRolledBack: the config is older than one this machine opened
// the vault with before.
var ErrConfigRolledBack = fault.New(fault.RolledBack, "encryptfs.conf was put back to an older version")

// ConfigSeen is what a machine has seen of one vault's configs.
type ConfigSeen struct {
	// Format is the highest format version opened.
	Format int
	// Flags are the feature flags of every config opened (a flag is
	// never dropped by a legitimate change).
	Flags []string `json:",omitempty"`
	// Epoch is the highest master-key epoch opened.
	Epoch uint32 `json:",omitempty"`
}

// Back lists how now is older than s, one phrase each ("" none).
func (s ConfigSeen) Back(now ConfigSeen) []string {
	var out []string
	if now.Format < s.Format {
		out = append(out, fmt.Sprintf("format %d, where this machine opened format %d", now.Format, s.Format))
	}
	for _, f := range s.Flags {
		if !slices.Contains(now.Flags, f) {
			out = append(out, fmt.Sprintf("without the feature %s this machine saw", f))
		}
	}
	if now.Epoch < s.Epoch {
		out = append(out, fmt.Sprintf("at master-key epoch %d, where this machine opened epoch %d (a config from before a --revoke)", now.Epoch, s.Epoch))
	}
	return out
}

// EpochBack reports whether now is at a lower master-key epoch than s.
func (s ConfigSeen) EpochBack(now ConfigSeen) bool { return now.Epoch < s.Epoch }

// Merge is s raised to now.
func (s ConfigSeen) Merge(now ConfigSeen) ConfigSeen {
	out := ConfigSeen{Format: max(s.Format, now.Format), Epoch: max(s.Epoch, now.Epoch)}
	out.Flags = slices.Clone(s.Flags)
	for _, f := range now.Flags {
		if !slices.Contains(out.Flags, f) {
			out.Flags = append(out.Flags, f)
		}
	}
	slices.Sort(out.Flags)
	return out
}

// Memory is the directory of a machine's memories of vaults: one JSON
// file per vault, named by its local ID.
type Memory string

// memoryName is the file of the vault with local ID id.
func memoryName(id []byte) string { return hex.EncodeToString(id) + ".json" }

// Load returns what this machine has seen of the vault with local ID id
// (ok false: never opened here).
func (m Memory) Load(id []byte) (s ConfigSeen, ok bool, err error) {
	b, err := readLocal(string(m), memoryName(id))
	if errors.Is(err, os.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, false, fmt.Errorf("%w: %s", ErrBadState, strings.TrimSuffix(string(m), "/")+"/"+memoryName(id))
	}
	return s, true, nil
}

// Save records s as what this machine has seen of the vault id.
func (m Memory) Save(id []byte, s ConfigSeen) error {
	if err := os.MkdirAll(string(m), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "\t")
	if err != nil {
		return err
	}
	return writeDurable(string(m), memoryName(id), b, 0o600)
}
