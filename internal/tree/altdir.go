package tree

import (
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
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

// altDirIDSuffix returns the conflict suffix of a backing name that is a
// conflict copy of the dirid file, if it is one.
func altDirIDSuffix(b string) (string, bool) {
	dirid := names.DirIDFile
	ext := dirid[strings.LastIndexByte(dirid, '.'):] // ".dirid"
	stem := strings.TrimSuffix(dirid, ext)           // "encryptfs"
	if sfx, ok := strings.CutPrefix(b, dirid); ok && names.IsConflictSuffix(sfx) {
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

// AltDirIDs returns the readable conflict copies of the ID file among the
// backing names ents of directory dirfd (a copy that is not a valid ID is
// left out; fsck reports it).
func (t *Tree) AltDirIDs(dirfd int, ents []string) []AltDirID {
	var out []AltDirID
	for _, b := range ents {
		sfx, ok := altDirIDSuffix(b)
		if !ok {
			continue
		}
		id, err := backing.ReadFileAt(dirfd, b, names.DirIDSize)
		if err != nil || len(id) != names.DirIDSize {
			continue
		}
		out = append(out, AltDirID{Backing: b, Suffix: sfx, ID: id})
	}
	return out
}

// DecryptAlt decrypts backing name b of dirfd under the conflicting IDs
// alts, as the alias "<plain><suffix>" (Orig is the plain name).
func (t *Tree) DecryptAlt(dirfd int, alts []AltDirID, b string) (Name, bool) {
	for _, a := range alts {
		n, err := t.DecryptName(dirfd, a.ID, b)
		if err != nil || n.Orig != "" {
			continue
		}
		full := n.Plain + a.Suffix
		if names.Validate(full) != nil {
			continue
		}
		n.Orig, n.Plain = n.Plain, full
		return n, true
	}
	return Name{}, false
}

// findAltConflicts finds the entries shown as orig+suffix that were made
// under the conflicting IDs in the dirid copies with that suffix (either
// form; see altDirIDSuffix).
func (t *Tree) findAltConflicts(dirfd int, orig, suffix string) []Name {
	dirid := names.DirIDFile
	ext := dirid[strings.LastIndexByte(dirid, '.'):]
	var found []Name
	for _, b := range []string{dirid + suffix, strings.TrimSuffix(dirid, ext) + suffix + ext} {
		id, err := backing.ReadFileAt(dirfd, b, names.DirIDSize)
		if err != nil || len(id) != names.DirIDSize {
			continue
		}
		on, err := t.Name(id, orig)
		if err != nil {
			continue
		}
		if n, ok := t.DecryptAlt(dirfd, []AltDirID{{Backing: b, Suffix: suffix, ID: id}}, on.Backing); ok && n.Orig == orig {
			found = append(found, n)
		}
	}
	return found
}
