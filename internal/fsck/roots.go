package fsck

import (
	"fmt"
	"path"

	"github.com/encryptfs/encryptfs/internal/engine"
)

// KindDirtyRoot is a file with roots (format v2, design §5) whose header
// is DIRTY: written and not closed or fsynced since (a crash), or an
// older header put back. Its chunks read with v1's guarantees only (each
// authentic at its index, but not one version as a whole). Repaired, when
// every chunk reads, by recomputing the tag blocks and the root.
const KindDirtyRoot Kind = "dirty-root"

// KindBadRoot is a file with roots whose header is clean but does not
// match the stored file: its size, a tag block or a chunk's tag is not
// what the root vouches for. The mount answers EIO for the whole file.
// Left by a power loss or kernel crash after a change not fsynced (the
// clean header at close, or the DIRTY header at the first write, is not
// fsynced: docs/format.md §16 "Durability"), or by tampering (an older
// chunk or tag block spliced in, the file cut). fsck reads it with v1's
// rules; --repair re-roots it when every chunk authenticates under them
// (file ID, index, final flag), which v1 would have accepted too: so a
// forged state gains an attacker nothing beyond v1.
const KindBadRoot Kind = "bad-root"

// fixRecomputeRoot rebuilds a DIRTY or bad-root file's tag blocks and root.
const fixRecomputeRoot fixAction = 200

// badRootDetail is the detail of a bad-root problem.
const badRootDetail = "the file's root does not match its contents (%v): changed since its last fsync and then a power loss, or tampering; the mount answers EIO for the whole file; --repair accepts it if every chunk authenticates"

// checkRoot reports a DIRTY file, or (rootErr) a clean one whose root
// does not match; damaged says its contents had a problem under v1's
// rules (bad chunks, a cut): such a file is not repaired, its chunks do
// not all read, and a root would vouch for what is left.
func (w *walker) checkRoot(cf *engine.RawFile, ent entry, pl place, damaged bool, rootErr error) {
	kind, action := KindDirtyRoot, "recompute the file's tag blocks and root from its chunks"
	switch {
	case rootErr != nil:
		kind, action = KindBadRoot, "re-root the file: recompute its tag blocks and root from its chunks (each authenticated under v1's rules)"
		w.add(Problem{Kind: kind, CipherPath: pl.cipher, PlainPath: pl.plain, Detail: fmt.Sprintf(badRootDetail, rootErr)})
	case cf.RootDirty():
		w.add(Problem{Kind: kind, CipherPath: pl.cipher, PlainPath: pl.plain,
			Detail: "the file's root is not up to date (changed since its last fsync, then a crash; or an older header put back): its chunks are checked one by one only; --repair accepts it if every chunk authenticates"})
	default:
		return
	}
	if w.plan && !damaged && ent.place != nil {
		w.addFix(Fix{Kind: kind, CipherPath: pl.cipher, PlainPath: pl.plain, Action: action,
			dir: path.Dir(pl.cipher), name: ent.backing, action: fixRecomputeRoot, place: *ent.place, ino: ent.st.Ino})
	}
}

// verifyRoot checks a clean file with roots as a whole (RawFile.VerifyRoot).
// If its root does not match (engine.IsBadRoot, also on open: rootErr),
// it returns the file reopened with v1's rules (Inspector.OpenUnrooted) for the
// contents check, and the mismatch. cf may be nil (the open failed with
// rootErr); the returned file replaces it (cf is closed).
func (w *walker) verifyRoot(cf *engine.RawFile, ro engine.Backing, ent entry, rootErr error) (*engine.RawFile, error, error) {
	if cf != nil && rootErr == nil {
		err := cf.VerifyRoot()
		if !engine.IsBadRoot(err) {
			return cf, nil, nil // matches, or damage the contents check reports
		}
		rootErr = err
		cf.Close()
	}
	if ent.place == nil {
		return nil, rootErr, errNoPlace
	}
	cf, err := w.ins.OpenUnrooted(ro, *ent.place)
	return cf, rootErr, err
}
