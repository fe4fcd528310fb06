package fsck

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/encryptfs/encryptfs/internal/engine"
)

// KindDupDirID: two or more directories have the same encryptfs.dirid.
// Directory IDs are random, so this never happens by chance: one was
// copied onto another (or a whole directory was copied within CIPHERDIR).
// Version 1 cannot tell which one is genuine, because the ID is not
// authenticated (docs/format.md §7, §11): equal names then encrypt alike in
// both directories, and entries, symlinks and whole subtrees can be moved
// between them unnoticed. Each directory of the set is reported, with the
// paths of the others in Detail.
const KindDupDirID Kind = "duplicate-dirid"

// dirIDPlace is where fsck found a directory ID.
type dirIDPlace struct{ cipher, plain string }

// dirIDIndex maps each directory ID seen to the directories that have it,
// in walk order. It keeps the paths of every directory (a few hundred
// bytes each), which is what naming all members of a duplicate set needs
// in one walk.
type dirIDIndex map[[engine.DirIDSize]byte][]dirIDPlace

// noteDirID records the ID of the directory at cipherRel (plainRel: its
// plaintext path, "" when unknown).
func (w *walker) noteDirID(id []byte, cipherRel, plainRel string) {
	if len(id) != engine.DirIDSize {
		return
	}
	if w.dirIDs == nil {
		w.dirIDs = make(dirIDIndex)
	}
	k := [engine.DirIDSize]byte(id)
	w.dirIDs[k] = append(w.dirIDs[k], dirIDPlace{cipher: cipherRel, plain: plainRel})
}

// reportDupDirIDs adds a KindDupDirID problem for each directory whose ID
// another directory shares, sets in the order of their IDs.
func (w *walker) reportDupDirIDs() {
	var dups [][engine.DirIDSize]byte
	for id, places := range w.dirIDs {
		if len(places) > 1 {
			dups = append(dups, id)
		}
	}
	slices.SortFunc(dups, func(a, b [engine.DirIDSize]byte) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range dups {
		places := w.dirIDs[id]
		for i, p := range places {
			var others []string
			for j, o := range places {
				if j != i {
					others = append(others, describePlace(o))
				}
			}
			w.add(Problem{Kind: KindDupDirID, CipherPath: joinCipher(p.cipher, engine.DirIDFile), PlainPath: p.plain,
				Detail: fmt.Sprintf("directory ID %x is also the ID of %s: one was copied from the other; "+
					"entries can be moved between them unnoticed (v1 does not authenticate directory IDs)",
					id[:], strings.Join(others, ", "))})
		}
	}
}

// describePlace names a directory by its backing path and, when known,
// its plaintext path.
func describePlace(p dirIDPlace) string {
	if p.plain == "" {
		return p.cipher
	}
	return fmt.Sprintf("%s (%s)", p.cipher, p.plain)
}
