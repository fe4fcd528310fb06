package fsck

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/engine"
)

// Links files (docs/format.md §14, fileengine/links.go): a file with more names
// than its header's slots keeps its bindings in encryptfs.links.<id> in the
// root, and its header says so (its links flag). fsck reports:
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
	used map[engine.FileID]bool
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
func (w *walker) noteHeader(ro engine.Backing) {
	suite := w.ins.Suite()
	if !suite.Bound() {
		return
	}
	raw := make([]byte, suite.HeaderSize())
	if n, _ := ro.ReadAt(raw, 0); n != len(raw) {
		return
	}
	id, ok := engine.LinksFileID(suite, raw)
	if !ok {
		return
	}
	if w.links.used == nil {
		w.links.used = make(map[engine.FileID]bool)
	}
	w.links.used[id] = true
}

// badLinks reports a file whose links file failed (engine.IsBadLinks).
func (w *walker) badLinks(err error, pl place) {
	w.add(Problem{Kind: KindBadLinks, CipherPath: pl.cipher, PlainPath: pl.plain,
		Detail: fmt.Sprintf("the file's links file (the bindings of its names) is missing, tampered with or another file's: the mount answers EIO at every name; not read (%v)", err)})
}

// checkLinksFiles reports the root's links files no file uses (after the
// walk), and plans their removal when the walk saw every header.
func (w *walker) checkLinksFiles(root *engine.InspectDir) {
	safe := !w.rep.Interrupted
	for _, p := range w.rep.Problems {
		if p.Kind == KindIO || p.Kind == KindHeader {
			safe = false
		}
	}
	for _, name := range w.links.files {
		id, ok := engine.LinksFileOf(name)
		if !ok {
			continue
		}
		if w.links.used[id] {
			continue
		}
		w.add(Problem{Kind: KindOrphanLinks, CipherPath: name,
			Detail: "links file of no file (left by a crash during a link or unlink, or by the removal of a file's last name)"})
		if safe {
			w.planRemove(root, ".", name, KindOrphanLinks, "remove the links file no file uses")
		}
	}
}

// isBadLinks reports whether err is a links file failure.
func isBadLinks(err error) bool { return engine.IsBadLinks(err) }
