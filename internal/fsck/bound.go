package fsck

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/encryptfs/encryptfs/internal/engine"
)

// Location binding (format v2, docs/format.md "v2: location binding"):
// every directory and regular file is bound to its place, its parent's
// directory ID and its full encrypted name. The walk knows each place, so
// it checks every binding as the mount would, and reports:
//
//   - misplaced-dir: a directory whose encryptfs.dirid does not bind it
//     where it is (moved or grafted there, or a copied ID file). The mount
//     answers EIO; fsck still checks what is inside under the ID.
//   - misplaced-file: a file whose header does not bind it where it is
//     (contents moved under another name or into another directory). The
//     mount answers EIO; its contents are not read.
//   - stale-binding: a directory, or a file with one name, bound to a
//     second place as well: a crash during a rename (or a link or unlink)
//     after the new binding was added and before the old one was dropped
//     (tree/bound_rename.go). Harmless to reads; it keeps a slot used and
//     leaves the old place valid should contents be put back there.
//     --repair drops it.
//
// What --repair may do, and why it is safe: it only removes bindings of
// places where the object is not, and only where fsck knows every place
// the object has: a directory has one name, a file with link count n has
// the n names the walk found (if it found them all: a name that does not
// decrypt leaves the file reported only). It never adds a binding (that
// would make moved contents valid where an attacker put them), and never
// touches a misplaced object.
const (
	KindMisplacedDir  Kind = "misplaced-dir"
	KindMisplacedFile Kind = "misplaced-file"
	KindStaleBinding  Kind = "stale-binding"
)

// Fix actions of binding repairs.
const (
	// fixRebindDir rewrites a directory's ID file bound to its place only.
	fixRebindDir fixAction = iota + 100
	// fixRebindFile rewrites a file's header bound to its place only.
	fixRebindFile
)

// readDirID reads the ID of directory wd (from its ID file as the walk
// read it) found at place p (nil: not known, the name of the directory
// did not decrypt). A directory not bound to p is reported as
// misplaced-dir and walked with its ID all the same; one with a stale
// second binding is reported (stale: with plan, planRebindDir fixes it).
func (w *walker) readDirID(wd *engine.WalkDir, p *engine.Place, plainRel string) (id []byte, stale bool, err error) {
	if !w.ins.Bound() {
		id, err = w.ins.DirID(wd, engine.Place{})
		return id, false, err
	}
	id, bindings, err := w.ins.DirIDUnchecked(wd)
	if err != nil || p == nil {
		return id, false, err
	}
	at := joinCipher(wd.Rel, engine.DirIDFile)
	if _, err := w.ins.DirID(wd, *p); engine.IsMisplaced(err) {
		w.add(Problem{Kind: KindMisplacedDir, CipherPath: at, PlainPath: plainRel,
			Detail: "the directory is not bound to where it is (moved or grafted here, or its directory ID file copied from another directory): the mount answers EIO"})
		return id, false, nil
	} else if err != nil {
		return nil, false, err
	}
	if bindings > 1 {
		w.add(Problem{Kind: KindStaleBinding, CipherPath: at, PlainPath: plainRel,
			Detail: "the directory is also bound to a place it is not at (a crash during a rename of it)"})
		return id, true, nil
	}
	return id, false, nil
}

// planRebindDir plans (with plan) to bind directory dir (at cipherRel),
// found at p and also bound to another place, to p only.
func (w *walker) planRebindDir(dir *engine.InspectDir, cipherRel, plainRel string, p engine.Place) {
	if !w.plan {
		return
	}
	self, err := dir.Stat()
	if err != nil {
		return
	}
	f := Fix{Kind: KindStaleBinding, CipherPath: joinCipher(cipherRel, engine.DirIDFile), PlainPath: plainRel,
		Action: "bind the directory to where it is only (drop the binding of its old place)",
		action: fixRebindDir, place: p, ino: self.Ino, dir: path.Dir(cipherRel), name: path.Base(cipherRel)}
	if cipherRel == "." {
		f.dir, f.name = ".", ""
	}
	w.addFix(f)
}

// entryPlace is where entry ent of directory d is bound, or nil without
// binding or when its name (or d's ID) is not known.
func (w *walker) entryPlace(d *checkDir, ent *entry) *engine.Place {
	if !w.ins.Bound() || d.dirID == nil || !ent.named {
		return nil
	}
	p := d.dir.Place(ent.name)
	return &p
}

// openFile opens the engine file of ro, found at ent's place. With
// binding and no known place, errNoPlace: its contents are not checked.
func (w *walker) openFile(ro engine.Backing, ent entry) (*engine.RawFile, error) {
	if !w.ins.Bound() {
		return w.ins.OpenRaw(ro)
	}
	if ent.place == nil {
		return nil, errNoPlace
	}
	return w.ins.OpenRawAt(ro, *ent.place)
}

// errNoPlace: a file of a bound vault whose name did not decrypt cannot
// be opened (its binding cannot be checked).
var errNoPlace = errors.New("fsck: the name did not decrypt, so the file's binding cannot be checked")

// checkBindings reports a file with more bindings than names. One with a
// single name is repaired (with plan) at once; one with several names
// waits for the end of the walk (staleLinks), which knows where its
// other names are.
func (w *walker) checkBindings(cf *engine.RawFile, ent entry, pl place) {
	n := cf.Bindings()
	if n <= int(ent.st.Nlink) || ent.place == nil {
		return
	}
	p := Problem{Kind: KindStaleBinding, CipherPath: pl.cipher, PlainPath: pl.plain,
		Detail: fmt.Sprintf("the file is bound to %d places but has %d names (a crash during a rename, link or unlink)", n, ent.st.Nlink)}
	f := Fix{Kind: KindStaleBinding, CipherPath: pl.cipher, PlainPath: pl.plain,
		Action: "bind the file to its names only (drop the bindings of other places)",
		dir:    path.Dir(pl.cipher), name: ent.backing, action: fixRebindFile, place: *ent.place, ino: ent.st.Ino}
	if ent.st.Nlink > 1 {
		if w.stale == nil {
			w.stale = make(map[inodeKey]*staleFile)
		}
		w.stale[inodeKey{uint64(ent.st.Dev), ent.st.Ino}] = &staleFile{problem: p, fix: f, nlink: int(ent.st.Nlink)}
		return
	}
	w.add(p)
	if w.plan {
		w.addFix(f)
	}
}

// staleFile is a file with several names and a stale binding, waiting
// for the walk to find its other names.
type staleFile struct {
	problem Problem
	fix     Fix
	nlink   int
	others  []engine.Place // the places of its other names, as the walk finds them
	unnamed bool           // one of its other names did not decrypt
}

// notePlace records where a further name of an already checked file is.
func (w *walker) notePlace(key inodeKey, ent entry) {
	sf := w.stale[key]
	if sf == nil {
		return
	}
	if ent.place == nil {
		sf.unnamed = true
		return
	}
	sf.others = append(sf.others, *ent.place)
}

// staleLinks reports the files with several names and a stale binding;
// with plan, it repairs those whose every name the walk found (the
// bindings of all of them are kept, none other).
func (w *walker) staleLinks() {
	files := slices.SortedFunc(maps.Values(w.stale), func(a, b *staleFile) int {
		return strings.Compare(a.problem.CipherPath, b.problem.CipherPath)
	})
	for _, sf := range files {
		w.add(sf.problem)
		if w.plan && !sf.unnamed && 1+len(sf.others) == sf.nlink {
			f := sf.fix
			f.also = sf.others
			w.addFix(f)
		}
	}
}
