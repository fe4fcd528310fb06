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
		dir, ok := v.touchAt(ev.Dir, ev.Name)
		if ok && ev.Flags&unix.O_CREAT != 0 {
			v.expectAt(dir, ev.Name, nil) // made again: what it is now is the disk's to say
		}
		if ok && ev.Fd >= 0 && v.paths != nil && ev.Name != names.DirIDFile {
			if k, isDir, ok := stat(ev.Fd); ok && !isDir {
				v.paths.putIf(gen, k, filepath.Join(dir, ev.Name), false)
			}
		}
	case backing.OpMkdir, backing.OpSymlink, backing.OpMknod, backing.OpWriteFile:
		if dir, ok := v.touchAt(ev.Dir, ev.Name); ok {
			v.expectAt(dir, ev.Name, nil)
		}
	case backing.OpUnlink:
		if dir, ok := v.touchAt(ev.Dir, ev.Name); ok {
			v.paths.forget(filepath.Join(dir, ev.Name))
			v.expectAt(dir, ev.Name, &expected{})
		}
	case backing.OpLink:
		v.touchAt(ev.Dir, ev.Name)
		if dir, ok := v.touchAt(ev.Dir2, ev.Name2); ok {
			v.expectAt(dir, ev.Name2, nil)
		}
	case backing.OpRename:
		from, ok1 := v.touchAt(ev.Dir, ev.Name)
		to, ok2 := v.touchAt(ev.Dir2, ev.Name2)
		if ok1 && ok2 {
			v.paths.renamed(filepath.Join(from, ev.Name), filepath.Join(to, ev.Name2), ev.Flags&unix.RENAME_EXCHANGE != 0)
			v.expectRenamed(from, ev.Name, to, ev.Name2, ev.Flags&unix.RENAME_EXCHANGE != 0)
		} else {
			v.paths.renamed("", "", true) // forget everything
		}
	case backing.OpWrite:
		v.touchWrite(ev, ev.Off, ev.Data)
	case backing.OpTruncate, backing.OpPunch:
		v.touchWrite(ev, -1, nil)
	case backing.OpSetxattr, backing.OpRemovexattr:
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

// fileRelPath is relPath of an event on a file's contents: an
// ObservedFile made with its stat names its inode, so the path cache
// answers without an fstat per write.
func (v *Vault) fileRelPath(ev backing.Event) (string, bool) {
	if v.paths != nil && ev.Ino != 0 {
		if p, _, ok := v.paths.lookup(inoKey{ev.Dev, ev.Ino}); ok {
			return p, true
		}
	}
	return v.relPath(ev.Fd)
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

// touchWrite is touchFd for a write of data at off; a write at offset 0
// that begins with an authentic header is this device's version of the
// file (expect.go).
func (v *Vault) touchWrite(ev backing.Event, off int64, data []byte) {
	p, ok := v.fileRelPath(ev)
	if !ok || p == "" {
		return
	}
	dir, name := parentOf(p), filepath.Base(p)
	v.touch(dir, name)
	if off != 0 || v.r.Header == nil || len(data) < v.r.HeaderSize {
		return
	}
	id, gen, err := v.r.Header(data[:v.r.HeaderSize])
	if err == nil {
		v.expectAt(dir, name, &expected{present: true, known: true, id: id, gen: gen})
	}
}

// expectAt sets the expectation of name in dir (nil forgets it).
func (v *Vault) expectAt(dir, name string, e *expected) {
	name, ok := recordedName(name)
	if !ok {
		return
	}
	v.touchMu.Lock()
	defer v.touchMu.Unlock()
	v.expectLocked(dir, name, e)
}

// expectRenamed moves the expectation of a renamed name: the new name is
// what the old one was (or unknown), the old one is gone (or, for an
// exchange, what the new one was).
func (v *Vault) expectRenamed(fromDir, from, toDir, to string, exchange bool) {
	from, ok1 := recordedName(from)
	to, ok2 := recordedName(to)
	v.touchMu.Lock()
	defer v.touchMu.Unlock()
	var src, dst *expected
	if e, ok := v.expects[fromDir][from]; ok1 && ok {
		src = &e
	}
	if e, ok := v.expects[toDir][to]; ok2 && ok {
		dst = &e
	}
	if ok2 {
		v.expectLocked(toDir, to, src)
	}
	if ok1 {
		if !exchange {
			dst = &expected{}
		}
		v.expectLocked(fromDir, from, dst)
	}
}

func parentOf(rel string) string {
	if d := filepath.Dir(rel); d != "." {
		return d
	}
	return ""
}

// recordedName is the name a manifest records for backing name name (a
// long name's sidecar stands for its entry), and whether it records one.
func recordedName(name string) (string, bool) {
	if long, ok := strings.CutSuffix(name, names.LongNameSuffix); ok && names.IsLongName(long) {
		name = long
	}
	return name, recorded(name)
}

// touch notes name of dir (a long name's sidecar stands for its entry).
func (v *Vault) touch(dir, name string) {
	name, ok := recordedName(name)
	if !ok {
		return
	}
	v.touchMu.Lock()
	defer v.touchMu.Unlock()
	if v.touched[dir] == nil {
		v.touched[dir] = map[string]bool{}
	}
	v.touched[dir][name] = true
}
