package fsck

import (
	"errors"
	"io"
	"path"

	"github.com/encryptfs/encryptfs/internal/engine"
	"golang.org/x/sys/unix"
)

// Planning the fixes of Repair, during its check walk. Each plan records
// the inode it was made for; Fix.apply refuses to act if the entry has
// changed since.

// addFix records a fix (only on Repair's walk).
func (w *walker) addFix(f Fix) {
	if w.plan {
		w.fixes = append(w.fixes, f)
	}
}

// planRemove plans to unlink regular file name of dir (at cipherRel).
func (w *walker) planRemove(dir *engine.InspectDir, cipherRel, name string, kind Kind, action string) {
	if !w.plan {
		return
	}
	st, err := dir.StatAt(name)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return // only files EncryptFS writes: nothing planted is touched
	}
	w.addFix(Fix{Kind: kind, CipherPath: joinCipher(cipherRel, name), Action: action,
		dir: cipherRel, name: name, action: fixRemove, ino: st.Ino})
}

// planTemp plans to remove a temporary entry: a file or symlink (a
// sidecar or symlink being replaced when the crash came), or a directory
// that holds at most a dirid.
func (w *walker) planTemp(dir *engine.InspectDir, cipherRel, name string) {
	if !w.plan {
		return
	}
	st, err := dir.StatAt(name)
	if err != nil {
		return
	}
	f := Fix{Kind: KindTemp, CipherPath: joinCipher(cipherRel, name), dir: cipherRel, name: name, ino: st.Ino}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFLNK:
		f.action, f.Action = fixRemove, "remove the temporary entry an interrupted operation left"
	case unix.S_IFDIR:
		sub, err := dir.Sub(name)
		if err != nil {
			return
		}
		ents, err := sub.List()
		sub.Close()
		if err != nil || len(ents) > 1 || len(ents) == 1 && ents[0].Name != engine.DirIDFile {
			return
		}
		f.action, f.Action = fixRemoveDir, "remove the empty temporary directory an interrupted operation left"
	default:
		return
	}
	w.addFix(f)
}

// dirIDRebuildable reports whether entry e may be in a directory that gets
// a new ID: nothing the lost ID could have named (the dirid itself; in the
// root, the config files).
func dirIDRebuildable(e string, isRoot bool) bool {
	if e == engine.DirIDFile {
		return true
	}
	return engine.ClassifyName(e, isRoot) == engine.NameConfig
}

// planDirID plans a new directory ID for directory dir (at
// cipherRel) whose ID could not be read (idErr), if it holds no entry the
// lost ID could have named, and its dirid is missing or a regular file
// (torn: a crash during mkdir, or after rmdir or a rename over it removed
// it). A directory with entries keeps its problem: a new ID would not
// decrypt them.
func (w *walker) planDirID(dir *engine.InspectDir, cipherRel, plainRel string, ents []engine.Dirent, idErr error) {
	if !engine.IsCorruptDir(idErr) {
		return
	}
	isRoot := cipherRel == "."
	for _, e := range ents {
		if !dirIDRebuildable(e.Name, isRoot) {
			return
		}
	}
	if st, err := dir.StatAt(engine.DirIDFile); err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	self, err := dir.Stat()
	if err != nil {
		return
	}
	f := Fix{Kind: KindDirID, CipherPath: joinCipher(cipherRel, engine.DirIDFile), PlainPath: plainRel,
		Action: "write a new directory ID (the directory is empty, so no name depends on the lost one)",
		action: fixDirID, ino: self.Ino}
	if !isRoot {
		f.dir, f.name = path.Dir(cipherRel), path.Base(cipherRel)
	} else {
		f.dir = "."
	}
	w.addFix(f)
}

// hasLongCopy reports whether a sync tool's copy of long-name entry long
// is among ents (it reads its name from long's sidecar).
func hasLongCopy(ents []engine.Dirent, long string) bool {
	for _, e := range ents {
		if l, ok := engine.LongCopyOf(e.Name); ok && l == long {
			return true
		}
	}
	return false
}

// planHeader plans to rebuild the header of a file whose header failed
// (ro, at pl) when every chunk of the file authenticates under the file ID
// the header holds. The flags are the engine's own choice (docs/format.md
// §5.4): SPARSE only if the file has an all-zero chunk that reads as a
// hole, none otherwise. A file without chunks is left alone: nothing would
// show that the file ID is the file's. A v2 header (location binding) is
// not rebuilt: its bindings are under the MAC, and rebuilding them would
// bind the contents to where they were found, which is what an attacker
// who moved them wants (bound.go); the file stays bad-header.
func (w *walker) planHeader(ent entry, pl place, ro *readOnly) {
	if !w.plan || ent.foreign || w.ins.Bound() {
		return
	}
	suite := w.ins.Suite()
	fi, err := ro.Stat()
	if err != nil || fi.Size() <= engine.HeaderSizeV1 {
		return
	}
	var raw [engine.HeaderSizeV1]byte
	if _, err := ro.ReadAt(raw[:], 0); err != nil {
		return
	}
	for _, c := range engine.HeaderCandidates(suite, raw[:]) {
		hdr := c.Header
		if !readsWith(w.ins, ro, hdr) {
			continue
		}
		action := "rebuild the header from the file ID it holds (every chunk authenticates under it)"
		if c.Sparse {
			action += " with SPARSE set: all-zero chunks of the file will read as holes"
		}
		w.addFix(Fix{Kind: KindHeader, CipherPath: pl.cipher, PlainPath: pl.plain, Action: action,
			dir: path.Dir(pl.cipher), name: ent.backing, action: fixHeader, header: hdr, ino: ent.st.Ino})
		return
	}
}

// readsWith reports whether the whole file ro reads without an error when
// its first 36 bytes are hdr.
func readsWith(ins *engine.Inspector, ro *readOnly, hdr []byte) bool {
	cf, err := ins.OpenRaw(&headerOverlay{readOnly: ro, hdr: hdr})
	if err != nil {
		return false
	}
	defer cf.Close()
	size, err := cf.Size()
	if err != nil {
		return false
	}
	buf := make([]byte, min(size, readBatch))
	for off := int64(0); off < size; off += int64(len(buf)) {
		n, err := cf.ReadAt(buf, off)
		if err != nil && !(errors.Is(err, io.EOF) && off+int64(n) == size) {
			return false
		}
	}
	return true
}

// headerOverlay reads a readOnly file with its first bytes replaced.
type headerOverlay struct {
	*readOnly
	hdr []byte
}

func (o *headerOverlay) ReadAt(p []byte, off int64) (int, error) {
	n, err := o.readOnly.ReadAt(p, off)
	if off < int64(len(o.hdr)) {
		copy(p[:n], o.hdr[off:])
	}
	return n, err
}
