package fsck

import (
	"fmt"
	"slices"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/session"
)

// The problem freshness finds (format 2 feature flag "Freshness",
// docs/format.md §15), when the session has it (the CLI opens fsck's
// session with session.FreshnessCheck).
const (
	// KindRolledBack: an entry, manifest or epoch file went back or was
	// deleted in a way no sync explains (or was behind for longer than
	// the grace period).
	KindRolledBack Kind = "rolled-back"
	// KindReplayedRoot: a file whose header is DIRTY, or whose root does
	// not match, while freshness records a later generation of it: not
	// what a crash leaves (a crash leaves the newest header this device
	// wrote), but an older state put back, typically a DIRTY header
	// copied while the file was open for writing. --repair does not
	// re-root it: a root would vouch for the replayed state.
	KindReplayedRoot Kind = "replayed-root"
)

// checkFreshness adds what the session's freshness check finds: what
// went back is a problem; what is behind is a note, like a sync tool's
// conflict copy (Report.Conflicts): a sync in flight, or a name a sync
// tool made (a conflict copy no device recorded), explains it, so it is
// no damage, and `encryptfs freshness status` tells when it has lasted
// long enough to count as rolled back. A vault no device has recorded
// yet gets one note.
func (w *walker) checkFreshness(s *session.Session) {
	fv := s.Freshness()
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
		if i.Status != engine.FreshRolledBack {
			w.rep.Notes = append(w.rep.Notes, fmt.Sprintf("freshness: %s", i))
			w.rep.Behind = true
			continue
		}
		path := i.Path
		if path == "" {
			path = "/"
		}
		w.rep.Problems = append(w.rep.Problems, Problem{Kind: KindRolledBack, CipherPath: ".", PlainPath: path, Detail: fmt.Sprintf("freshness: %s", i)})
		if i.OlderVersion {
			w.markReplayed(path)
		}
	}
}

// markReplayed turns the dirty-root or bad-root problem of the file at
// plaintext path p, which freshness found at an older generation than
// recorded, into a replayed-root problem, and drops its re-rooting fix.
func (w *walker) markReplayed(p string) {
	for k := range w.rep.Problems {
		pr := &w.rep.Problems[k]
		if pr.PlainPath != p || pr.Kind != KindDirtyRoot && pr.Kind != KindBadRoot {
			continue
		}
		pr.Kind = KindReplayedRoot
		pr.Detail = "the file's header is older than the generation freshness recorded for it (" + pr.Detail +
			"): an older state was put back (a DIRTY header copied while the file was open), not left by a crash; --repair does not re-root it: restore the file from a backup, or take it as it is with encryptfs freshness accept"
	}
	w.fixes = slices.DeleteFunc(w.fixes, func(f Fix) bool {
		return f.PlainPath == p && f.action == fixRecomputeRoot
	})
}
