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

// observer is the recording side of freshness: it turns each backing
// event into the (backing directory, backing name) pairs it changed and
// notes them, with what this device made of them, in v.noted. It owns
// the rule that an operation pays no more than a path lookup for
// freshness (the path cache, or one readlink); everything else waits for
// the batch. It holds no state of its own.
type observer struct{ v *Vault }

// Observe notes which backing names an event changed.
func (o observer) Observe(ev backing.Event) {
	v := o.v
	n := &v.noted
	switch ev.Op {
	case backing.OpOpen:
		var gen uint64
		if v.paths != nil {
			gen = v.paths.generation()
		}
		dir, ok := o.touchAt(ev.Dir, ev.Name)
		if ok && ev.Flags&unix.O_CREAT != 0 {
			n.expectAt(dir, ev.Name, nil) // made again: what it is now is the disk's to say
		}
		if ok && ev.Fd >= 0 && v.paths != nil && ev.Name != names.DirIDFile {
			if k, isDir, ok := stat(ev.Fd); ok && !isDir {
				v.paths.putIf(gen, k, filepath.Join(dir, ev.Name), false)
			}
		}
	case backing.OpMkdir, backing.OpSymlink, backing.OpMknod, backing.OpWriteFile:
		if dir, ok := o.touchAt(ev.Dir, ev.Name); ok {
			n.expectAt(dir, ev.Name, nil)
		}
	case backing.OpUnlink:
		if dir, ok := o.touchAt(ev.Dir, ev.Name); ok {
			v.paths.forget(filepath.Join(dir, ev.Name))
			n.expectAt(dir, ev.Name, &expected{})
		}
	case backing.OpLink:
		o.touchAt(ev.Dir, ev.Name)
		if dir, ok := o.touchAt(ev.Dir2, ev.Name2); ok {
			n.expectAt(dir, ev.Name2, nil)
		}
	case backing.OpRename:
		from, ok1 := o.touchAt(ev.Dir, ev.Name)
		to, ok2 := o.touchAt(ev.Dir2, ev.Name2)
		if ok1 && ok2 {
			v.paths.renamed(filepath.Join(from, ev.Name), filepath.Join(to, ev.Name2), ev.Flags&unix.RENAME_EXCHANGE != 0)
			n.expectRenamed(from, ev.Name, to, ev.Name2, ev.Flags&unix.RENAME_EXCHANGE != 0)
		} else {
			v.paths.renamed("", "", true) // forget everything
		}
	case backing.OpWrite:
		o.touchWrite(ev, ev.Off, ev.Data)
	case backing.OpTruncate, backing.OpPunch:
		o.touchWrite(ev, -1, nil)
	case backing.OpSetxattr, backing.OpRemovexattr:
		o.touchFd(ev.Fd)
	case backing.OpFsync:
		if ev.Fd >= 0 {
			o.touchFd(ev.Fd)
		}
	}
}

// relPath is the path of fd relative to CIPHERDIR ("" for the root);
// ok is false for anything outside it or deleted. From the path cache
// when it knows fd's inode.
func (o observer) relPath(fd int) (string, bool) {
	if o.v.paths == nil {
		return o.procPath(fd)
	}
	k, isDir, ok := stat(fd)
	if !ok {
		return "", false
	}
	p, gen, ok := o.v.paths.lookup(k)
	if ok {
		return p, true
	}
	p, ok = o.procPath(fd)
	if ok {
		o.v.paths.putIf(gen, k, p, isDir)
	}
	return p, ok
}

// fileRelPath is relPath of an event on a file's contents: an
// ObservedFile made with its stat names its inode, so the path cache
// answers without an fstat per write.
func (o observer) fileRelPath(ev backing.Event) (string, bool) {
	if o.v.paths != nil && ev.Ino != 0 {
		if p, _, ok := o.v.paths.lookup(inoKey{ev.Dev, ev.Ino}); ok {
			return p, true
		}
	}
	return o.relPath(ev.Fd)
}

// procPath is relPath from the kernel: the link /proc/self/fd/N.
func (o observer) procPath(fd int) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || strings.HasSuffix(p, " (deleted)") {
		return "", false
	}
	rel, err := filepath.Rel(o.v.real, p)
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
func (o observer) touchAt(dirfd int, name string) (string, bool) {
	dir, ok := o.relPath(dirfd)
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
	o.v.noted.touch(d, n)
	return dir, true
}

// touchFd notes the file or directory fd is open on.
func (o observer) touchFd(fd int) {
	p, ok := o.relPath(fd)
	if !ok || p == "" {
		return
	}
	o.v.noted.touch(parentOf(p), filepath.Base(p))
}

// touchWrite is touchFd for a write of data at off; a write at offset 0
// that begins with an authentic header is this device's version of the
// file (expect.go).
func (o observer) touchWrite(ev backing.Event, off int64, data []byte) {
	p, ok := o.fileRelPath(ev)
	if !ok || p == "" {
		return
	}
	dir, name := parentOf(p), filepath.Base(p)
	o.v.noted.touch(dir, name)
	if off != 0 || o.v.r.Header == nil || len(data) < o.v.r.HeaderSize {
		return
	}
	id, gen, err := o.v.r.Header(data[:o.v.r.HeaderSize])
	if err == nil {
		o.v.noted.expectAt(dir, name, &expected{present: true, known: true, id: id, gen: gen})
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
