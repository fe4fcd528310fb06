package fsck

import (
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/fileengine"
)

// Links files (docs/format.md §14, core/links.go): a file with more names
// than its header's slots keeps its bindings in encryptfs.links.<id> in the
// root, and its header says so (content.FlagLinks). fsck reports:
//
//   - bad-links: a file whose header has FlagLinks and whose links file is
//     missing, fails its MAC, or is another file's (deleted, tampered
//     with, swapped). The mount answers EIO at every name; its contents
//     are not read. --repair does nothing: rebuilding the list would bind
//     the contents to wherever they were found.
//   - orphan-links: a links file in the root whose file ID no file's
//     header (with FlagLinks) has: a crash between writing the links file
//     and the header of a file's third link, a lost removal after an
//     unlink brought a file back to two names, or the last name of such a
//     file removed. --repair removes it, which is safe: no header reads it
//     (a header without FlagLinks never does), and a later third link
//     writes a new one. Removal is planned only after a walk that read
//     every file's header (no io or bad-header problem, not interrupted):
//     a file fsck could not see might still need it.
const (
	KindBadLinks    Kind = "bad-links"
	KindOrphanLinks Kind = "orphan-links"
)

// linksCheck is what the walk gathers about links files.
type linksCheck struct {
	// used: the IDs of the files whose header has FlagLinks.
	used map[content.FileID]bool
	// files: the links files found in the root (backing names).
	files []string
}

// noteLinksFile records a links file of the root.
func (w *walker) noteLinksFile(name string) {
	w.links.files = append(w.links.files, name)
}

// noteHeader records the file ID of a file whose header (read from ro,
// checked by its MAC) has FlagLinks, whether or not the file opens: a
// file whose name does not decrypt still owns its links file.
func (w *walker) noteHeader(ro fileengine.Backing) {
	suite := w.eng.Suite()
	if !suite.Bound() {
		return
	}
	raw := make([]byte, suite.HeaderSize())
	if n, _ := ro.ReadAt(raw, 0); n != len(raw) {
		return
	}
	h, err := suite.ParseHeader(raw)
	if err != nil || h.Flags&content.FlagLinks == 0 {
		return
	}
	if w.links.used == nil {
		w.links.used = make(map[content.FileID]bool)
	}
	w.links.used[h.FileID] = true
}

// badLinks reports a file whose links file failed (bind.ErrBadLinks).
func (w *walker) badLinks(err error, pl place) {
	w.add(Problem{Kind: KindBadLinks, CipherPath: pl.cipher, PlainPath: pl.plain,
		Detail: fmt.Sprintf("the file's links file (the bindings of its names) is missing, tampered with or another file's: the mount answers EIO at every name; not read (%v)", err)})
}

// checkLinksFiles reports the root's links files no file uses (after the
// walk), and plans their removal when the walk saw every header.
func (w *walker) checkLinksFiles(rootfd int) {
	safe := !w.rep.Interrupted
	for _, p := range w.rep.Problems {
		if p.Kind == KindIO || p.Kind == KindHeader {
			safe = false
		}
	}
	for _, name := range w.links.files {
		id, ok := bind.ParseLinksName(name)
		if !ok {
			continue
		}
		if w.links.used[content.FileID(id)] {
			continue
		}
		w.add(Problem{Kind: KindOrphanLinks, CipherPath: name,
			Detail: "links file of no file (left by a crash during a link or unlink, or by the removal of a file's last name)"})
		if safe {
			w.planRemove(rootfd, ".", name, KindOrphanLinks, "remove the links file no file uses")
		}
	}
}

// isLinksName reports whether bn is a links file's name.
func isLinksName(bn string) bool {
	_, ok := bind.ParseLinksName(bn)
	return ok
}

// isBadLinks reports whether err is a links file failure.
func isBadLinks(err error) bool { return errors.Is(err, bind.ErrBadLinks) }
