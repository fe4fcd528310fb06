package fsck

import (
	"fmt"
	"slices"

	"github.com/encryptfs/encryptfs/internal/engine"
	"golang.org/x/sys/unix"
)

// The check's walk (Inspector.Walk, names sorted: the report's order): each
// directory is checked as it is entered (its ID, its conflict copies of
// the ID), each of its names in order (an entry checked and, if a
// directory, walked into; any other name classified), and what needs all
// of its names last (orphan symlink sidecars, its xattrs, its salvage
// copy's attributes).

// checkDir is what the check keeps of a directory it walks
// (engine.WalkDir.Data).
type checkDir struct {
	bp    *engine.Place // its place (location binding; nil: not known)
	plain string        // its plaintext path
	known bool          // plain is known
	// dest is its copy in the salvage directory (nil when not salvaging
	// or the copy could not be made); a subdirectory's is made on entering
	// it, in its parent's (parentDest), under salvName.
	dest       *destDir
	parentDest *destDir
	salvName   string
	pl         place // a subdirectory's place as an entry of its parent

	dir              *engine.InspectDir // made on entering it (with its ID)
	dirID            []byte
	present          map[string]bool
	alts             []engine.AltDirID
	badAlts          []string
	usedLinkSidecars map[string]bool
	linkSidecars     []string
}

// walk checks the vault beneath root, whose place is rootPlace, with its
// salvage copy dest (nil: none).
func (w *walker) walk(root *engine.InspectDir, rootPlace engine.Place, dest *destDir) {
	w.ins.Walk(root, &checkDir{bp: &rootPlace, plain: "/", known: true, dest: dest}, engine.Walker{
		Sorted:     true,
		Enter:      w.enterDir,
		Other:      w.otherName,
		Entry:      w.entryName,
		OpenFailed: w.openFailed,
		Leave:      w.leaveDir,
	})
}

// enterDir starts the check of directory wd: its salvage copy, its ID
// (unreadable: names in it cannot be decrypted), and its conflict copies
// of the ID. A directory that cannot be listed is reported and left.
func (w *walker) enterDir(wd *engine.WalkDir) (bool, error) {
	d := wd.Data.(*checkDir)
	if d.parentDest != nil {
		d.dest = w.salv.mkdir(w.rep, d.parentDest, d.salvName, d.pl)
	}
	w.rep.Summary.Dirs++
	dirID, stale, idErr := w.readDirID(wd, d.bp, d.plain)
	if idErr != nil {
		w.add(Problem{Kind: KindDirID, CipherPath: joinCipher(wd.Rel, engine.DirIDFile), PlainPath: d.plain,
			Detail: fmt.Sprintf("directory ID unreadable, names in this directory cannot be decrypted: %v", idErr)})
		dirID = nil
	}
	d.dirID = dirID
	d.dir = w.ins.Dir(wd, dirID, d.bp)
	if stale {
		w.planRebindDir(d.dir, wd.Rel, d.plain, *d.bp)
	}
	w.noteDirID(dirID, wd.Rel, d.plain)
	if wd.ListErr != nil {
		w.add(Problem{Kind: KindIO, CipherPath: wd.Rel, PlainPath: d.plain, Detail: fmt.Sprintf("list directory: %v", wd.ListErr)})
		if d.parentDest != nil && d.dest != nil {
			d.dest.close()
		}
		return false, nil
	}
	if idErr != nil && w.plan {
		w.planDirID(d.dir, wd.Rel, d.plain, wd.Ents, idErr)
	}
	d.present = make(map[string]bool, len(wd.Ents))
	for _, e := range wd.Ents {
		d.present[e.Name] = true
	}
	d.alts, d.badAlts = d.dir.AltDirIDs(wd.Ents)
	d.usedLinkSidecars = make(map[string]bool)
	return true, nil
}

// otherName classifies name of wd, which is no entry: EncryptFS's own
// files are passed over, what an interrupted operation or a sync tool
// left is reported (and with plan, its removal planned).
func (w *walker) otherName(wd *engine.WalkDir, bn string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	d := wd.Data.(*checkDir)
	at := joinCipher(wd.Rel, bn)
	isRoot := wd.Rel == "."
	switch c := engine.ClassifyName(bn, isRoot); {
	case c == engine.NameDirID:
	case c == engine.NameAltDirID:
		// Two copies of this directory made apart and merged by a sync
		// tool: no damage, but a choice for the user (entries made
		// under this ID are shown as "<name><suffix>").
		if slices.Contains(d.badAlts, bn) {
			w.add(Problem{Kind: KindDirID, CipherPath: at, PlainPath: d.plain, Detail: "conflict copy of the directory ID is unreadable or not 16 bytes"})
		} else {
			w.rep.Conflicts = append(w.rep.Conflicts, Problem{Kind: KindConflict, CipherPath: at, PlainPath: d.plain,
				Detail: "copy of the directory ID made by a sync tool (the directory was made on two sides apart); entries made under it are shown as <name><suffix>, read-only until renamed"})
		}
	case c == engine.NameConfig:
	case c == engine.NameUpgradeMarker:
		// A half-upgraded vault does not open; a bound one with the
		// marker lost the upgrade's last step (session/marker.go).
		w.add(Problem{Kind: KindTemp, CipherPath: at, Detail: "left by an upgrade that finished; encryptfs upgrade removes it"})
	case c == engine.NameFresh: // freshness epochs and manifests (format.md §15)
	case c == engine.NameConfigTemp:
		w.add(Problem{Kind: KindTemp, CipherPath: at, Detail: "config file left by an interrupted write; compare it with encryptfs.conf and remove it"})
		w.planRemove(d.dir, wd.Rel, bn, KindTemp, "remove the config left by an interrupted write (the vault opened with encryptfs.conf)")
	case c == engine.NameLongSidecar:
		long := engine.LongSidecarOwner(bn)
		if !d.present[long] {
			w.add(Problem{Kind: KindOrphanSidecar, CipherPath: at, Detail: "long-name sidecar without its entry " + long})
			if !hasLongCopy(wd.Ents, long) {
				// A sync tool's copy of the entry reads its name
				// from this sidecar: then it stays.
				w.planRemove(d.dir, wd.Rel, bn, KindOrphanSidecar, "remove the long-name sidecar without an entry")
			}
		}
	case c == engine.NameLongSidecarCopy:
		w.add(Problem{Kind: KindOrphanSidecar, CipherPath: at, Detail: "copy of a long-name sidecar made by another program (sync conflict?)"})
	case c == engine.NameSymlinkSidecar:
		d.linkSidecars = append(d.linkSidecars, bn)
	case c == engine.NameTemp:
		w.add(Problem{Kind: KindTemp, CipherPath: at, Detail: "temporary entry left by an interrupted operation"})
		w.planTemp(d.dir, wd.Rel, bn)
	case c == engine.NameLinks && w.ins.Bound():
		w.noteLinksFile(bn)
	default:
		w.add(Problem{Kind: KindReserved, CipherPath: at, Detail: "unknown name in the reserved encryptfs.* namespace"})
	}
	return nil
}

// entryName checks entry bn of wd (lstat st, or statErr); a directory
// is walked into.
func (w *walker) entryName(wd *engine.WalkDir, bn string, st unix.Stat_t, statErr error) (bool, any, error) {
	if err := w.ctx.Err(); err != nil {
		return false, nil, err
	}
	d := wd.Data.(*checkDir)
	at := joinCipher(wd.Rel, bn)
	if statErr != nil {
		w.add(Problem{Kind: KindIO, CipherPath: at, Detail: fmt.Sprintf("stat: %v", statErr)})
		return false, nil, nil
	}
	ent := entry{backing: bn, st: st}
	w.nameEntry(d, at, &ent)
	ent.place = w.entryPlace(d, &ent)
	pl := place{cipher: at, plain: joinPlain(d.plain, ent.shown, d.known && ent.named), known: d.known && ent.named}
	salvName := ent.shown
	if !ent.named || ent.shadowed {
		salvName = undecryptableName(bn)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		sub := &checkDir{bp: ent.place, plain: pl.plain, known: pl.known, salvName: salvName, pl: pl}
		if d.dest != nil {
			sub.parentDest = d.dest
		}
		return true, sub, nil
	case unix.S_IFREG:
		w.regular(d.dir, ent, pl, d.dest, salvName)
	case unix.S_IFLNK:
		if sc := w.symlink(d.dir, ent, pl, d.dest, salvName); sc != "" {
			d.usedLinkSidecars[sc] = true
		}
	default:
		w.rep.Summary.Others++
		w.salvageNode(d.dest, salvName, ent, pl)
	}
	return false, nil, nil
}

// openFailed reports a subdirectory that cannot be opened.
func (w *walker) openFailed(_ *engine.WalkDir, _ string, data any, err error) error {
	pl := data.(*checkDir).pl
	w.add(Problem{Kind: KindIO, CipherPath: pl.cipher, PlainPath: pl.plain, Detail: fmt.Sprintf("open directory: %v", err)})
	return nil
}

// leaveDir ends the check of wd: the symlink sidecars no symlink used,
// its xattrs, its salvage copy's attributes. Not when the check was
// interrupted (only the salvage copy is closed).
func (w *walker) leaveDir(wd *engine.WalkDir) error {
	d := wd.Data.(*checkDir)
	if d.parentDest != nil && d.dest != nil {
		defer d.dest.close()
	}
	if w.ctx.Err() != nil {
		return nil
	}
	for _, sc := range d.linkSidecars {
		if !d.usedLinkSidecars[sc] {
			w.add(Problem{Kind: KindOrphanSidecar, CipherPath: joinCipher(wd.Rel, sc), Detail: "symlink target sidecar without a symlink that uses it"})
			w.planRemove(d.dir, wd.Rel, sc, KindOrphanSidecar, "remove the symlink target sidecar no symlink uses")
		}
	}
	var xs []plainXattr
	if d.dirID != nil {
		xs = w.xattrs(d.dir.Object(), place{cipher: wd.Rel, plain: d.plain, known: d.known})
	} else {
		w.unverifiableXattrs(d.dir.Object(), place{cipher: wd.Rel, plain: d.plain, known: d.known}, "its directory ID is unreadable")
	}
	if d.dest != nil {
		st, err := d.dir.Stat()
		if err == nil {
			w.salv.finishDir(w.rep, d.dest, st, xs)
		}
	}
	return nil
}
