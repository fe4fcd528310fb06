package fsck

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/fresh"
)

// The problem freshness finds (format 2 feature flag "Freshness",
// docs/format.md §15), when the session has it (the CLI opens fsck's
// session with session.FreshnessCheck).
const (
	// KindRolledBack: an entry, manifest or epoch file went back or was
	// deleted in a way no sync explains (or was behind for longer than
	// the grace period).
	KindRolledBack Kind = "rolled-back"
)

// checkFreshness adds what the session's freshness check finds: what
// went back is a problem; what is behind is a note, like a sync tool's
// conflict copy (Report.Conflicts): a sync in flight, or a name a sync
// tool made (a conflict copy no device recorded), explains it, so it is
// no damage, and `encryptfs freshness status` tells when it has lasted
// long enough to count as rolled back. A vault no device has recorded
// yet gets one note.
func (w *walker) checkFreshness(fv *fresh.Vault) {
	if fv == nil {
		return
	}
	rep, err := fv.Check()
	switch {
	case err != nil:
		w.rep.Problems = append(w.rep.Problems, Problem{Kind: KindIO, CipherPath: ".", Detail: "freshness check: " + err.Error()})
		return
	case rep.NothingRecorded():
		w.rep.Notes = append(w.rep.Notes, "freshness: nothing recorded yet (the vault's first mount records it)")
		return
	}
	for _, i := range rep.Issues {
		if i.Status != fresh.RolledBack {
			w.rep.Notes = append(w.rep.Notes, fmt.Sprintf("freshness: %s", i))
			continue
		}
		path := i.Path
		if path == "" {
			path = "/"
		}
		w.rep.Problems = append(w.rep.Problems, Problem{Kind: KindRolledBack, CipherPath: ".", PlainPath: path, Detail: fmt.Sprintf("freshness: %s", i)})
	}
}
