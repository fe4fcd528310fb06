package fsck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	freshcrypto "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// inodeKey names a backing inode (hard links are checked once).
type inodeKey struct{ dev, ino uint64 }

// walker holds the state of one Check.
type walker struct {
	ctx  context.Context
	t    *tree.Tree
	eng  *core.Engine
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

	// noXattrs: the backing store keeps no xattrs (tree.ProbeXattrs on
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
	name    tree.Name // valid when named
	named   bool      // the name decrypted (possibly as a conflict copy)
	foreign bool      // the name is not one EncryptFS writes
	shown   string    // plaintext name shown (plain + conflict suffix)
	// shadowed: a conflict copy that another entry of the same displayed
	// name hides (tree.ErrShadowed); salvaged under its backing name.
	shadowed bool
	// place is where the entry is bound with location binding (bound.go);
	// nil without binding or when the name did not decrypt.
	place *bind.Place
}

// dir checks the open backing directory dirfd (at cipherRel / plainRel) and
// everything below it; dest is its copy in the salvage directory (nil when
// not salvaging or the copy could not be made).
// bp is the directory's place (location binding; nil: not known).
func (w *walker) dir(dirfd int, bp *bind.Place, cipherRel, plainRel string, known bool, dest *destDir) {
	w.rep.Summary.Dirs++
	dirID, idErr := w.readDirID(dirfd, bp, cipherRel, plainRel)
	if idErr != nil {
		w.add(Problem{Kind: KindDirID, CipherPath: joinCipher(cipherRel, names.DirIDFile), PlainPath: plainRel,
			Detail: fmt.Sprintf("directory ID unreadable, names in this directory cannot be decrypted: %v", idErr)})
		dirID = nil
	}
	w.noteDirID(dirID, cipherRel, plainRel)
	ents, err := backing.ReadDir(dirfd)
	if err != nil {
		w.add(Problem{Kind: KindIO, CipherPath: cipherRel, PlainPath: plainRel, Detail: fmt.Sprintf("list directory: %v", err)})
		return
	}
	if idErr != nil && w.plan {
		w.planDirID(dirfd, cipherRel, plainRel, ents, idErr)
	}
	slices.SortFunc(ents, func(a, b backing.Dirent) int { return strings.Compare(a.Name, b.Name) })
	present := make(map[string]bool, len(ents))
	for _, e := range ents {
		present[e.Name] = true
	}
	alts, badAlts := w.t.AltDirIDsAt(dirfd, ents, w.dirPlace(bp))
	usedLinkSidecars := make(map[string]bool)
	var linkSidecars []string
	isRoot := cipherRel == "."

	for _, e := range ents {
		if w.ctx.Err() != nil {
			return
		}
		bn := e.Name
		at := joinCipher(cipherRel, bn)
		switch {
		case bn == names.DirIDFile:
			continue
		case tree.IsAltDirIDName(bn):
			// Two copies of this directory made apart and merged by a sync
			// tool: no damage, but a choice for the user (entries made
			// under this ID are shown as "<name><suffix>").
			if slices.Contains(badAlts, bn) {
				w.add(Problem{Kind: KindDirID, CipherPath: at, PlainPath: plainRel, Detail: "conflict copy of the directory ID is unreadable or not 16 bytes"})
			} else {
				w.rep.Conflicts = append(w.rep.Conflicts, Problem{Kind: KindConflict, CipherPath: at, PlainPath: plainRel,
					Detail: "copy of the directory ID made by a sync tool (the directory was made on two sides apart); entries made under it are shown as <name><suffix>, read-only until renamed"})
			}
			continue
		case isRoot && (bn == config.FileName || bn == config.BackupName):
			continue
		case isRoot && (bn == config.UpgradeMarkerName || bn == config.UpgradeMarkerName+".tmp"):
			// A half-upgraded vault does not open; a bound one with the
			// marker lost the upgrade's last step (session/upgrade.go).
			w.add(Problem{Kind: KindTemp, CipherPath: at, Detail: "left by an upgrade that finished; encryptfs upgrade removes it"})
		case isRoot && freshcrypto.IsName(bn): // freshness epochs and manifests (format.md §15)
			continue
		case isRoot && (bn == config.FileName+".tmp" || bn == config.BackupName+".tmp"):
			w.add(Problem{Kind: KindTemp, CipherPath: at, Detail: "config file left by an interrupted write; compare it with encryptfs.conf and remove it"})
			w.planRemove(dirfd, cipherRel, bn, KindTemp, "remove the config left by an interrupted write (the vault opened with encryptfs.conf)")
			continue
		case names.IsSidecar(bn):
			long := strings.TrimSuffix(bn, names.LongNameSuffix)
			if !present[long] {
				w.add(Problem{Kind: KindOrphanSidecar, CipherPath: at, Detail: "long-name sidecar without its entry " + long})
				if !hasLongCopy(ents, long) {
					// A sync tool's copy of the entry reads its name
					// from this sidecar: then it stays.
					w.planRemove(dirfd, cipherRel, bn, KindOrphanSidecar, "remove the long-name sidecar without an entry")
				}
			}
			continue
		case isLongSidecarCopy(bn):
			w.add(Problem{Kind: KindOrphanSidecar, CipherPath: at, Detail: "copy of a long-name sidecar made by another program (sync conflict?)"})
			continue
		case strings.HasPrefix(bn, meta.SymlinkSidecarPrefix):
			linkSidecars = append(linkSidecars, bn)
			continue
		case strings.HasPrefix(bn, names.TempPrefix):
			w.add(Problem{Kind: KindTemp, CipherPath: at, Detail: "temporary entry left by an interrupted operation"})
			w.planTemp(dirfd, cipherRel, bn)
			continue
		case isRoot && w.t.Bound() && isLinksName(bn):
			w.noteLinksFile(bn)
			continue
		case !tree.IsEntryName(bn):
			w.add(Problem{Kind: KindReserved, CipherPath: at, Detail: "unknown name in the reserved encryptfs.* namespace"})
			continue
		}
		st, err := backing.Fstatat(dirfd, bn)
		if err != nil {
			w.add(Problem{Kind: KindIO, CipherPath: at, Detail: fmt.Sprintf("stat: %v", err)})
			continue
		}
		ent := entry{backing: bn, st: st}
		w.nameEntry(dirfd, dirID, bp, alts, at, plainRel, known, &ent)
		ent.place = w.entryPlace(dirID, &ent)
		pl := place{cipher: at, plain: joinPlain(plainRel, ent.shown, known && ent.named), known: known && ent.named}
		salvName := ent.shown
		if !ent.named || ent.shadowed {
			salvName = undecryptableName(bn)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			w.subdir(dirfd, ent, pl, dest, salvName)
		case unix.S_IFREG:
			w.regular(dirfd, ent, pl, dest, salvName)
		case unix.S_IFLNK:
			if sc := w.symlink(dirfd, dirID, ent, pl, dest, salvName); sc != "" {
				usedLinkSidecars[sc] = true
			}
		default:
			w.rep.Summary.Others++
			w.salvageNode(dest, salvName, ent, pl)
		}
	}
	for _, sc := range linkSidecars {
		if !usedLinkSidecars[sc] {
			w.add(Problem{Kind: KindOrphanSidecar, CipherPath: joinCipher(cipherRel, sc), Detail: "symlink target sidecar without a symlink that uses it"})
			w.planRemove(dirfd, cipherRel, sc, KindOrphanSidecar, "remove the symlink target sidecar no symlink uses")
		}
	}
	var xs []plainXattr
	if dirID != nil {
		xs = w.xattrs(dirfd, dirID, place{cipher: cipherRel, plain: plainRel, known: known})
	} else {
		w.unverifiableXattrs(dirfd, place{cipher: cipherRel, plain: plainRel, known: known}, "its directory ID is unreadable")
	}
	if dest != nil {
		st, err := backing.Fstat(dirfd)
		if err == nil {
			w.salv.finishDir(w.rep, dest, st, xs)
		}
	}
}

// nameEntry decrypts the entry's backing name and reports what is wrong
// with it (bp: the directory's place, with location binding). On return
// ent.named says whether a plaintext name is known.
func (w *walker) nameEntry(dirfd int, dirID []byte, bp *bind.Place, alts []tree.AltDirID, at, plainRel string, known bool, ent *entry) {
	bn := ent.backing
	if dirID == nil {
		return // reported once for the directory
	}
	if names.IsLongName(bn) {
		side, err := backing.ReadFileAt(dirfd, names.SidecarName(bn), 512)
		switch {
		case errors.Is(err, unix.ENOENT):
			w.add(Problem{Kind: KindLongName, CipherPath: at, Detail: "long-name sidecar " + names.SidecarName(bn) + " is missing: the name cannot be decrypted"})
			return
		case err != nil:
			w.add(Problem{Kind: KindLongName, CipherPath: at, Detail: fmt.Sprintf("long-name sidecar unreadable: %v", err)})
			return
		}
		if _, err := names.CheckSidecar(bn, side); err != nil {
			w.add(Problem{Kind: KindLongName, CipherPath: at, Detail: fmt.Sprintf("long-name sidecar does not belong to this entry: %v", err)})
			return
		}
	}
	n, err := w.t.DecryptName(dirfd, dirID, bn)
	if err != nil && len(alts) > 0 {
		// Made under a conflicting directory ID: shown as a conflict copy.
		if an, ok := w.t.DecryptAlt(dirfd, alts, bn); ok {
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
			p := Problem{Kind: KindConflict, CipherPath: at, PlainPath: joinPlain(plainRel, ent.shown, known),
				Detail: fmt.Sprintf("copy of %q with a suffix added by a sync tool (sync conflict); read-only until renamed", n.Orig)}
			if r, _, err := w.t.ResolveAt(dirfd, dirID, w.dirPlace(bp), n.Plain, false); err != nil || r.Backing != bn {
				ent.shadowed = true
				p.Detail = fmt.Sprintf("copy of %q with a suffix added by a sync tool, hidden: another entry is shown under the same name", n.Orig)
				w.add(p)
			} else {
				w.rep.Conflicts = append(w.rep.Conflicts, p)
			}
		}
		return
	}
	if tree.IsLongCopy(bn) {
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

// isLongSidecarCopy reports whether bn is such a copy of a long-name
// sidecar ("encryptfs.long.<H> (1).name"): it holds a name, no entry.
func isLongSidecarCopy(bn string) bool {
	base, ok := strings.CutSuffix(bn, names.LongNameSuffix)
	return ok && !names.IsSidecar(bn) && tree.IsLongCopy(base)
}

// isNameRune reports whether r can appear in an encrypted backing name.
func isNameRune(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// subdir checks a backing subdirectory.
func (w *walker) subdir(dirfd int, ent entry, pl place, dest *destDir, salvName string) {
	sub, err := backing.OpenSubdir(dirfd, ent.backing)
	if err != nil {
		w.add(Problem{Kind: KindIO, CipherPath: pl.cipher, PlainPath: pl.plain, Detail: fmt.Sprintf("open directory: %v", err)})
		return
	}
	defer backing.Close(sub)
	var subDest *destDir
	if dest != nil {
		subDest = w.salv.mkdir(w.rep, dest, salvName, pl)
	}
	w.dir(sub, ent.place, pl.cipher, pl.plain, pl.known, subDest)
	if subDest != nil {
		subDest.close()
	}
}

// prescan counts regular files and their plaintext bytes for the progress
// display: a metadata-only walk (tree.Walk: the entries the check walks).
func (w *walker) prescan(rootfd int) (files, bytes int64) {
	suite := w.eng.Suite()
	seen := make(map[inodeKey]bool)
	tree.Walk(rootfd, nil, tree.Walker{
		Entry: func(_ *tree.WalkDir, _ string, st unix.Stat_t, err error) (bool, any, error) {
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
