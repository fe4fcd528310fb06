package fresh

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// Feeding the writer: the session's tree writes CIPHERDIR through a
// backing.FS whose observer is teed to v (Observe). Each change notes a
// (backing directory, backing name) pair; the batch reads those back.

// Observe returns the FS the session's tree should write through: f's
// observer (if any) and v both see every change.
func (v *Vault) Observe(f *backing.FS) *backing.FS { return backing.Tee(f, observer{v}) }

type observer struct{ v *Vault }

// Observe notes which backing names an event changed.
func (o observer) Observe(ev backing.Event) {
	v := o.v
	switch ev.Op {
	case backing.OpOpen, backing.OpMkdir, backing.OpSymlink, backing.OpMknod, backing.OpWriteFile, backing.OpUnlink:
		v.touchAt(ev.Dir, ev.Name)
	case backing.OpLink, backing.OpRename:
		v.touchAt(ev.Dir, ev.Name)
		v.touchAt(ev.Dir2, ev.Name2)
	case backing.OpSetxattr, backing.OpRemovexattr, backing.OpWrite, backing.OpTruncate, backing.OpPunch:
		v.touchFd(ev.Fd)
	case backing.OpFsync:
		if ev.Fd >= 0 {
			v.touchFd(ev.Fd)
		}
	}
}

// relPath is the path of fd relative to CIPHERDIR ("" for the root);
// ok is false for anything outside it or deleted.
func (v *Vault) relPath(fd int) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || strings.HasSuffix(p, " (deleted)") {
		return "", false
	}
	rel, err := filepath.Rel(v.real, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	if rel == "." {
		rel = ""
	}
	return rel, true
}

func (v *Vault) touchAt(dirfd int, name string) {
	dir, ok := v.relPath(dirfd)
	if !ok {
		return
	}
	if name == names.DirIDFile { // a directory's ID (mkdir, rebinding): its entry in its parent
		if dir == "" {
			return
		}
		dir, name = parentOf(dir), filepath.Base(dir)
	}
	v.touch(dir, name)
}

func (v *Vault) touchFd(fd int) {
	p, ok := v.relPath(fd)
	if !ok || p == "" {
		return
	}
	v.touch(parentOf(p), filepath.Base(p))
}

func parentOf(rel string) string {
	if d := filepath.Dir(rel); d != "." {
		return d
	}
	return ""
}

// touch notes name of dir (a long name's sidecar stands for its entry).
func (v *Vault) touch(dir, name string) {
	if long, ok := strings.CutSuffix(name, names.LongNameSuffix); ok && names.IsLongName(long) {
		name = long
	}
	if !recorded(name) {
		return
	}
	v.touchMu.Lock()
	defer v.touchMu.Unlock()
	if v.touched[dir] == nil {
		v.touched[dir] = map[string]bool{}
	}
	v.touched[dir][name] = true
}
