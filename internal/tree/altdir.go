package tree

import (
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// Directory-ID conflicts (docs/format.md §7.1). When two copies of a vault
// are kept in step by a sync tool and both make a directory of the same
// name while apart, each gets its own random ID, and both names encrypt
// to the same backing name (the name depends on the parent's ID only).
// The tool merges the two directories: it keeps one encryptfs.dirid and
// renames the other to a conflict copy, "encryptfs.dirid<suffix>" or,
// Syncthing, which puts its suffix before an extension,
// "encryptfs<suffix>.dirid". The entries made on the losing side are
// encrypted under the losing ID. They are shown, read-only as every
// alias, under "<plain name><suffix>" (the suffix of the dirid copy), so
// that the directory loses no entry and no name clashes; renaming one
// adopts it under the directory's own ID.

// AltDirID is a conflict copy of a directory's ID file.
type AltDirID struct {
	Backing string // the copy's backing name
	Suffix  string // the sync tool's conflict suffix
	ID      []byte
}

// dirIDStemExt splits the ID file's name into "encryptfs" and ".dirid",
// between which Syncthing puts its suffix.
func dirIDStemExt() (stem, ext string) {
	i := strings.LastIndexByte(names.DirIDFile, '.')
	return names.DirIDFile[:i], names.DirIDFile[i:]
}

// altDirIDNames returns the two names a conflict copy of the ID file with
// suffix sfx can have: "encryptfs.dirid<sfx>" and "encryptfs<sfx>.dirid".
func altDirIDNames(sfx string) [2]string {
	stem, ext := dirIDStemExt()
	return [2]string{names.DirIDFile + sfx, stem + sfx + ext}
}

// altDirIDSuffix returns the conflict suffix of a backing name that is a
// conflict copy of the dirid file (either form of altDirIDNames), if it
// is one.
func altDirIDSuffix(b string) (string, bool) {
	stem, ext := dirIDStemExt()
	if sfx, ok := strings.CutPrefix(b, names.DirIDFile); ok && names.IsConflictSuffix(sfx) {
		return sfx, true
	}
	if mid, ok := strings.CutPrefix(b, stem); ok {
		if sfx, ok := strings.CutSuffix(mid, ext); ok && names.IsConflictSuffix(sfx) {
			return sfx, true
		}
	}
	return "", false
}

// IsAltDirIDName reports whether backing name b is a conflict copy of a
// directory's ID file (see AltDirID).
func IsAltDirIDName(b string) bool {
	_, ok := altDirIDSuffix(b)
	return ok
}

// Alts reads the conflict copies of the ID file among the backing
// entries ents of directory d (List and fsck both list the directory
// first). It returns the valid ones, and the backing names of the copies
// that are unreadable or not an ID, which are left out (fsck reports
// them). With location binding a conflict copy is a v2 ID file like the
// winner's, made on the other side for the same directory name in the
// same parent, so it is bound to the same place: a copy not bound to d's
// place is invalid (a copy planted from another directory would otherwise
// make its entries readable here). Without a place every copy is invalid.
// A directory renamed since the sync tool made the copy keeps the copy's
// old binding (a rename rebinds the winner only, to stay O(1)): its
// losing entries are then undecryptable, until renamed back.
func (ids *DirIDs) Alts(d Dir, ents []backing.Dirent) (alts []AltDirID, invalid []string) {
	var p *bind.Place
	for _, e := range ents {
		sfx, ok := altDirIDSuffix(e.Name)
		if !ok {
			continue
		}
		id, err := ids.lay.alt(d.fd, e.Name, func() *bind.Place {
			if p == nil && d.place != nil {
				if pl, err := d.place(); err == nil {
					p = &pl
				}
			}
			return p
		})
		if err != nil {
			invalid = append(invalid, e.Name)
			continue
		}
		alts = append(alts, AltDirID{Backing: e.Name, Suffix: sfx, ID: id})
	}
	return alts, invalid
}

// DecryptAlt decrypts backing name b of directory d under the conflicting
// IDs alts, as the alias "<plain><suffix>" (Orig is the plain name).
func (t *Tree) DecryptAlt(d Dir, alts []AltDirID, b string) (Name, bool) {
	for _, a := range alts {
		n, err := t.DecryptName(NewDir(d.fd, a.ID, nil), b)
		if err != nil || n.Orig != "" {
			continue
		}
		full := n.Plain + a.Suffix
		if names.Validate(full) != nil {
			continue
		}
		n.Orig, n.Plain, n.altID = n.Plain, full, a.ID
		return n, true
	}
	return Name{}, false
}

// findAltConflicts finds the entries shown as orig+suffix that were made
// under the conflicting IDs in the dirid copies with that suffix (either
// form; see altDirIDSuffix).
// With location binding a copy counts only if it is bound to d's place
// (DirIDs.Alts).
func (t *Tree) findAltConflicts(d Dir, orig, suffix string) []Name {
	var found []Name
	var p *bind.Place
	for _, b := range altDirIDNames(suffix) {
		id, err := t.ids.lay.alt(d.fd, b, func() *bind.Place {
			if p == nil && d.place != nil {
				if _, serr := backing.Fstatat(d.fd, b); serr != nil {
					return nil // no such copy: the place is not needed
				}
				if pl, perr := d.place(); perr == nil {
					p = &pl
				}
			}
			return p
		})
		if err != nil {
			continue
		}
		on, err := t.Name(id, orig)
		if err != nil {
			continue
		}
		if n, ok := t.DecryptAlt(d, []AltDirID{{Backing: b, Suffix: suffix, ID: id}}, on.Backing); ok && n.Orig == orig {
			found = append(found, n)
		}
	}
	return found
}
