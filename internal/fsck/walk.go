package fsck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/encryptfs/encryptfs/internal/engine"
	"golang.org/x/sys/unix"
)

// inodeKey names a backing inode (hard links are checked once).
type inodeKey struct{ dev, ino uint64 }

// walker holds the state of one Check.
type walker struct {
	ctx  context.Context
	ins  *engine.Inspector // the vault, raw but safe
	rep  *Report
	salv *salvager // nil: check only

	progress     func(Progress)
	prog         Progress
	start        time.Time
	lastProgress time.Time

	// seen maps a regular file's inode to its salvage path ("" if it was
	// not salvaged), so that further hard links are not checked again and
	// are linked, not copied, in the salvage directory.
	seen map[inodeKey]string

	// dirIDs finds directories that share an ID (dirids.go).
	dirIDs dirIDIndex

	// noXattrs: the backing store keeps no xattrs (engine.ProbeXattrs on
	// the root), so none are listed or checked.
	noXattrs bool

	// filesWithData and filesWithBad count non-empty files and those of
	// them with bad chunks, for Report.Hints.
	filesWithData, filesWithBad int64

	// links: the links files and their users (links.go).
	links linksCheck
	// stale: files with several names and a stale binding (bound.go).
	stale map[inodeKey]*staleFile

	// plan: Repair's walk, which also plans fixes (repairplan.go).
	plan  bool
	fixes []Fix
}

// progressEvery bounds how often Options.Progress is called.
const progressEvery = 100 * time.Millisecond

// report calls the progress callback, at most every progressEvery unless force.
func (w *walker) report(force bool) {
	if w.progress == nil {
		return
	}
	now := time.Now()
	if !force && now.Sub(w.lastProgress) < progressEvery {
		return
	}
	w.lastProgress = now
	w.prog.Elapsed = now.Sub(w.start)
	w.progress(w.prog)
}

// add records a problem.
func (w *walker) add(p Problem) { w.rep.Problems = append(w.rep.Problems, p) }

// place is where an entry is: its backing path, its plaintext path (""
// when unknown) and its salvage name.
type place struct {
	cipher string
	plain  string
	known  bool // plain is known
}

// entry is one classified backing directory entry that stands for a
// plaintext object (named or not).
type entry struct {
	backing string
	st      unix.Stat_t
	name    engine.Name // valid when named
	named   bool        // the name decrypted (possibly as a conflict copy)
	foreign bool        // the name is not one EncryptFS writes
	shown   string      // plaintext name shown (plain + conflict suffix)
	// shadowed: a conflict copy that another entry of the same displayed
	// name hides (engine.IsShadowed); salvaged under its backing name.
	shadowed bool
	// place is where the entry is bound with location binding (bound.go);
	// nil without binding or when the name did not decrypt.
	place *engine.Place
}

// nameEntry decrypts the backing name of entry ent (at) of directory d
// and reports what is wrong with it. On return ent.named says whether a
// plaintext name is known.
func (w *walker) nameEntry(d *checkDir, at string, ent *entry) {
	bn := ent.backing
	if d.dirID == nil {
		return // reported once for the directory
	}
	if engine.IsLongName(bn) {
		side, err := d.dir.ReadSmallFile(engine.LongNameSidecar(bn), 512)
		switch {
		case errors.Is(err, unix.ENOENT):
			w.add(Problem{Kind: KindLongName, CipherPath: at, Detail: "long-name sidecar " + engine.LongNameSidecar(bn) + " is missing: the name cannot be decrypted"})
			return
		case err != nil:
			w.add(Problem{Kind: KindLongName, CipherPath: at, Detail: fmt.Sprintf("long-name sidecar unreadable: %v", err)})
			return
		}
		if err := engine.CheckLongSidecar(bn, side); err != nil {
			w.add(Problem{Kind: KindLongName, CipherPath: at, Detail: fmt.Sprintf("long-name sidecar does not belong to this entry: %v", err)})
			return
		}
	}
	n, err := d.dir.DecryptName(bn)
	if err != nil && len(d.alts) > 0 {
		// Made under a conflicting directory ID: shown as a conflict copy.
		if an, ok := d.dir.DecryptAlt(d.alts, bn); ok {
			n, err = an, nil
		}
	}
	if err == nil {
		ent.name, ent.named, ent.shown = n, true, n.Plain
		if n.Orig != "" {
			// tree shows a sync-conflict copy "<encname><suffix>" (or a
			// copy of a long-name entry) as "<plain><suffix>" when the
			// encrypted name authenticates; fsck still reports it, since
			// the user has a conflict to resolve. The resolver says
			// whether it is the entry shown under that name.
			// A copy the mount shows is no damage: it is listed in
			// Report.Conflicts, and the vault can still be clean. A copy
			// hidden behind another entry of its name is a problem.
			p := Problem{Kind: KindConflict, CipherPath: at, PlainPath: joinPlain(d.plain, ent.shown, d.known),
				Detail: fmt.Sprintf("copy of %q with a suffix added by a sync tool (sync conflict); read-only until renamed", n.Orig)}
			if r, _, err := d.dir.Resolve(n.Plain); err != nil || r.Backing != bn {
				ent.shadowed = true
				p.Detail = fmt.Sprintf("copy of %q with a suffix added by a sync tool, hidden: another entry is shown under the same name", n.Orig)
				w.add(p)
			} else {
				w.rep.Conflicts = append(w.rep.Conflicts, p)
			}
		}
		return
	}
	if engine.IsLongCopy(bn) {
		// A copy of a long-name entry whose original sidecar is gone or
		// does not decrypt (tree decrypts the others as conflict copies).
		ent.foreign = true
		w.add(Problem{Kind: KindForeign, CipherPath: at, Detail: "copy of a long-name entry whose name cannot be decrypted"})
		return
	}
	if strings.IndexFunc(bn, func(r rune) bool { return !isNameRune(r) }) >= 0 {
		ent.foreign = true
		w.add(Problem{Kind: KindForeign, CipherPath: at, Detail: "not a name EncryptFS writes (a file added to CIPHERDIR by another program, or a copy whose suffix is no sync tool's conflict pattern?)"})
		return
	}
	w.add(Problem{Kind: KindBadName, CipherPath: at, Detail: fmt.Sprintf("name does not decrypt: %v", err)})
}

// isNameRune reports whether r can appear in an encrypted backing name.
func isNameRune(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// prescan counts regular files and their plaintext bytes for the progress
// display: a metadata-only walk beneath root (Inspector.Walk: the entries
// the check walks).
func (w *walker) prescan(root *engine.InspectDir) (files, bytes int64) {
	suite := w.ins.Suite()
	seen := make(map[inodeKey]bool)
	w.ins.Walk(root, nil, engine.Walker{
		Entry: func(_ *engine.WalkDir, _ string, st unix.Stat_t, err error) (bool, any, error) {
			if err := w.ctx.Err(); err != nil {
				return false, nil, err
			}
			if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				return err == nil, nil, nil // a directory: descend
			}
			if st.Nlink > 1 {
				k := inodeKey{uint64(st.Dev), st.Ino}
				if seen[k] {
					return false, nil, nil
				}
				seen[k] = true
			}
			files++
			if n, err := suite.PlainSize(st.Size); err == nil {
				bytes += n
			}
			return false, nil, nil
		},
	})
	return files, bytes
}
