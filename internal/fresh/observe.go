package fresh

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
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
	case backing.OpOpen:
		var gen uint64
		if v.paths != nil {
			gen = v.paths.generation()
		}
		if dir, ok := v.touchAt(ev.Dir, ev.Name); ok && ev.Fd >= 0 && v.paths != nil && ev.Name != names.DirIDFile {
			if k, isDir, ok := stat(ev.Fd); ok && !isDir {
				v.paths.putIf(gen, k, filepath.Join(dir, ev.Name), false)
			}
		}
	case backing.OpMkdir, backing.OpSymlink, backing.OpMknod, backing.OpWriteFile:
		v.touchAt(ev.Dir, ev.Name)
	case backing.OpUnlink:
		if dir, ok := v.touchAt(ev.Dir, ev.Name); ok {
			v.paths.forget(filepath.Join(dir, ev.Name))
		}
	case backing.OpLink:
		v.touchAt(ev.Dir, ev.Name)
		v.touchAt(ev.Dir2, ev.Name2)
	case backing.OpRename:
		from, ok1 := v.touchAt(ev.Dir, ev.Name)
		to, ok2 := v.touchAt(ev.Dir2, ev.Name2)
		if ok1 && ok2 {
			v.paths.renamed(filepath.Join(from, ev.Name), filepath.Join(to, ev.Name2), ev.Flags&unix.RENAME_EXCHANGE != 0)
		} else {
			v.paths.renamed("", "", true) // forget everything
		}
	case backing.OpSetxattr, backing.OpRemovexattr, backing.OpWrite, backing.OpTruncate, backing.OpPunch:
		v.touchFd(ev.Fd)
	case backing.OpFsync:
		if ev.Fd >= 0 {
			v.touchFd(ev.Fd)
		}
	}
}

// relPath is the path of fd relative to CIPHERDIR ("" for the root);
// ok is false for anything outside it or deleted. From the path cache
// when it knows fd's inode.
func (v *Vault) relPath(fd int) (string, bool) {
	if v.paths == nil {
		return v.procPath(fd)
	}
	k, isDir, ok := stat(fd)
	if !ok {
		return "", false
	}
	p, gen, ok := v.paths.lookup(k)
	if ok {
		return p, true
	}
	p, ok = v.procPath(fd)
	if ok {
		v.paths.putIf(gen, k, p, isDir)
	}
	return p, ok
}

// procPath is relPath from the kernel: the link /proc/self/fd/N.
func (v *Vault) procPath(fd int) (string, bool) {
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

// touchAt notes name in directory dirfd and returns the directory's
// path (ok false if it is outside CIPHERDIR or deleted).
func (v *Vault) touchAt(dirfd int, name string) (string, bool) {
	dir, ok := v.relPath(dirfd)
	if !ok {
		return "", false
	}
	d, n := dir, name
	if name == names.DirIDFile { // a directory's ID (mkdir, rebinding): its entry in its parent
		if dir == "" {
			return dir, true
		}
		d, n = parentOf(dir), filepath.Base(dir)
	}
	v.touch(d, n)
	return dir, true
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
