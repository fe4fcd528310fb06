package cli

import (
	"fmt"
	"strings"

	"github.com/encryptfs/encryptfs/internal/keyslot"
)

// slotJSON is one slot in key list --json and info --json.
type slotJSON struct {
	ID        int
	Type      string
	Label     string
	Recipient string   `json:",omitempty"`
	KDF       *kdfJSON `json:",omitempty"`
}

type kdfJSON struct {
	Algorithm string
	Time      uint32
	MemoryKiB uint32
	Threads   uint8
}

func slotsJSON(slots []keyslot.Info) []slotJSON {
	out := make([]slotJSON, 0, len(slots))
	for _, si := range slots {
		j := slotJSON{ID: si.ID, Type: si.Type, Label: si.Label, Recipient: si.Recipient}
		if si.KDF != nil {
			j.KDF = &kdfJSON{si.KDF.Algorithm, si.KDF.Time, si.KDF.MemoryKiB, si.KDF.Threads}
		}
		out = append(out, j)
	}
	return out
}

// describeSlot is a slot's line in key list and info.
func describeSlot(si keyslot.Info) string {
	detail := ""
	switch {
	case si.KDF != nil:
		detail = fmt.Sprintf("  Argon2id t=%d m=%d MiB p=%d", si.KDF.Time, si.KDF.MemoryKiB/1024, si.KDF.Threads)
	case si.Recipient != "":
		detail = "  " + si.Recipient
	}
	// Label and Recipient are display-safe (config refuses anything else);
	// displayName quotes them anyway if that ever changed.
	return strings.TrimRight(fmt.Sprintf("%3d  %-8s  %-16s%s", si.ID, si.Type, displayName(si.Label), detail), " ")
}
