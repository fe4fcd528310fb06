package fsck

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/fresh"
)

// The problems freshness finds (format 2 feature flag "Freshness",
// docs/format.md §15), when the session has it (the CLI opens fsck's
// session with session.FreshnessCheck).
const (
	// KindRolledBack: an entry, manifest or epoch file went back or was
	// deleted in a way no sync explains.
	KindRolledBack Kind = "rolled-back"
	// KindBehind: recorded state not (yet) there, in a way a sync in
	// flight could explain.
	KindBehind Kind = "behind"
)

// checkFreshness adds what the session's freshness check finds: each
// issue is a problem, except on a vault no device has recorded yet
// (a note: its first mount records it).
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
		k := KindBehind
		if i.Status == fresh.RolledBack {
			k = KindRolledBack
		}
		path := i.Path
		if path == "" {
			path = "/"
		}
		w.rep.Problems = append(w.rep.Problems, Problem{Kind: k, CipherPath: ".", PlainPath: path, Detail: fmt.Sprintf("freshness: %s", i)})
	}
}
