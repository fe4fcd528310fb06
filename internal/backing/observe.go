package backing

import (
	"golang.org/x/sys/unix"
)

// Observing the backing store. The FS methods are the only way for the
// layers above to make a change to CIPHERDIR (create, remove, rename,
// link, write a small file, fsync, set or remove an xattr): the system
// calls behind them are unexported, so no caller can pick, by calling a
// free function instead, whether crash replay and freshness see a change.
// An FS without an Observer makes the same system calls and reports
// nothing; with one, each successful mutation and each fsync barrier is
// reported, in the order it was made, so that a test (internal/crashsim)
// can rebuild every state a crash could leave behind and internal/fresh
// can record it. A nil *FS is valid and observes nothing: a caller that
// must stay unobserved passes one explicitly and says why.
//
// Not reported: chmod, chown and times (crash consistency of metadata is
// not tested), reads, and the writes of a file wrapped by the package's
// NewFile rather than (*FS).NewFile.

// Op is the kind of an observed Event.
type Op uint8

// The observed operations.
const (
	// OpOpen: Openat of Dir/Name with Flags; it may have created the file
	// (O_CREAT) or cut it (O_TRUNC).
	OpOpen    Op = iota + 1
	OpMkdir      // Mkdirat Dir/Name
	OpSymlink    // Symlinkat Dir/Name -> Target
	OpMknod      // Mknodat Dir/Name
	OpLink       // Linkat Dir/Name to Dir2/Name2
	OpUnlink     // Unlinkat Dir/Name; Flags holds unix.AT_REMOVEDIR for rmdir
	OpRename     // Renameat2 Dir/Name to Dir2/Name2 with Flags
	// OpWriteFile: WriteFileAt Dir/Name: created exclusively, Data written,
	// fsynced (the file, not Dir).
	OpWriteFile
	OpWrite       // pwrite of Data at Off on Fd
	OpTruncate    // ftruncate of Fd to Off
	OpPunch       // punch hole of Len bytes at Off on Fd
	OpSetxattr    // Fsetxattr Name = Data on Fd
	OpRemovexattr // Fremovexattr Name on Fd
	// OpFsync: fsync of Fd (a file or a directory), or, when Fd is -1, of
	// directory entry Name of Dir ("" or "." for Dir itself).
	OpFsync
)

// Event is one observed mutation or barrier. Which fields are set depends
// on Op (see the Op constants); unused fds are -1. Data is the caller's
// buffer: an Observer that keeps it must copy it.
type Event struct {
	Op     Op
	Dir    int
	Name   string
	Dir2   int
	Name2  string
	Target string
	Fd     int
	// Dev and Ino identify Fd's inode when the FS knows it without
	// asking (an ObservedFile made with its stat); 0 otherwise.
	Dev, Ino uint64
	Off      int64
	Len      int64
	Data     []byte
	Flags    uint
}

// Observer sees every successful mutation and barrier made through an FS,
// after the system call returned and before the FS method returns. It is
// called from whatever goroutine made the call.
type Observer interface {
	Observe(Event)
}

// FS makes the changes to a backing store, reporting each to its Observer.
// A nil *FS, or one without an Observer, reports nothing.
type FS struct {
	obs Observer
}

// NewFS returns an FS that reports to obs.
func NewFS(obs Observer) *FS { return &FS{obs: obs} }

func (f *FS) note(ev Event) {
	if f != nil && f.obs != nil {
		f.obs.Observe(ev)
	}
}

// observed reports whether events are reported at all.
func (f *FS) observed() bool { return f != nil && f.obs != nil }

// Observed reports whether f reports its events to an Observer.
func (f *FS) Observed() bool { return f.observed() }

// Openat is openat, reported as OpOpen when flags may change
// the file system (O_CREAT, O_TRUNC).
func (f *FS) Openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	fd, err := openat(dirfd, name, flags, mode)
	if err == nil && flags&(unix.O_CREAT|unix.O_TRUNC) != 0 {
		f.note(Event{Op: OpOpen, Dir: dirfd, Name: name, Dir2: -1, Fd: fd, Flags: uint(flags)})
	}
	return fd, err
}

// Mkdirat is mkdirat, reported as OpMkdir.
func (f *FS) Mkdirat(dirfd int, name string, mode uint32) error {
	err := mkdirat(dirfd, name, mode)
	if err == nil {
		f.note(Event{Op: OpMkdir, Dir: dirfd, Name: name, Dir2: -1, Fd: -1})
	}
	return err
}

// Unlinkat is unlinkat, reported as OpUnlink.
func (f *FS) Unlinkat(dirfd int, name string, flags int) error {
	err := unlinkat(dirfd, name, flags)
	if err == nil {
		f.note(Event{Op: OpUnlink, Dir: dirfd, Name: name, Dir2: -1, Fd: -1, Flags: uint(flags)})
	}
	return err
}

// Renameat2 is renameat2, reported as OpRename.
func (f *FS) Renameat2(olddirfd int, oldname string, newdirfd int, newname string, flags uint) error {
	err := renameat2(olddirfd, oldname, newdirfd, newname, flags)
	if err == nil {
		f.note(Event{Op: OpRename, Dir: olddirfd, Name: oldname, Dir2: newdirfd, Name2: newname, Fd: -1, Flags: flags})
	}
	return err
}

// Linkat is linkat, reported as OpLink.
func (f *FS) Linkat(olddirfd int, oldname string, newdirfd int, newname string) error {
	err := linkat(olddirfd, oldname, newdirfd, newname)
	if err == nil {
		f.note(Event{Op: OpLink, Dir: olddirfd, Name: oldname, Dir2: newdirfd, Name2: newname, Fd: -1})
	}
	return err
}

// Symlinkat is symlinkat, reported as OpSymlink.
func (f *FS) Symlinkat(target string, dirfd int, name string) error {
	err := symlinkat(target, dirfd, name)
	if err == nil {
		f.note(Event{Op: OpSymlink, Dir: dirfd, Name: name, Dir2: -1, Fd: -1, Target: target})
	}
	return err
}

// Mknodat is mknodat, reported as OpMknod.
func (f *FS) Mknodat(dirfd int, name string, mode uint32, dev uint64) error {
	err := mknodat(dirfd, name, mode, dev)
	if err == nil {
		f.note(Event{Op: OpMknod, Dir: dirfd, Name: name, Dir2: -1, Fd: -1, Flags: uint(mode)})
	}
	return err
}

// WriteFileAt is writeFileAt, reported as OpWriteFile.
func (f *FS) WriteFileAt(dirfd int, name string, data []byte, mode uint32) error {
	err := writeFileAt(dirfd, name, data, mode)
	if err == nil {
		f.note(Event{Op: OpWriteFile, Dir: dirfd, Name: name, Dir2: -1, Fd: -1, Data: data})
	}
	return err
}

// Fsync is fsync, reported as OpFsync of fd.
func (f *FS) Fsync(fd int) error {
	err := fsync(fd)
	if err == nil {
		f.note(Event{Op: OpFsync, Dir: -1, Dir2: -1, Fd: fd})
	}
	return err
}

// FsyncDirAt is fsyncDirAt, reported as OpFsync of Dir/Name.
func (f *FS) FsyncDirAt(dirfd int, name string) error {
	err := fsyncDirAt(dirfd, name)
	if err == nil {
		f.note(Event{Op: OpFsync, Dir: dirfd, Name: name, Dir2: -1, Fd: -1})
	}
	return err
}

// Fsetxattr is fsetxattr, reported as OpSetxattr.
func (f *FS) Fsetxattr(fd int, name string, value []byte, flags int) error {
	err := fsetxattr(fd, name, value, flags)
	if err == nil {
		f.note(Event{Op: OpSetxattr, Dir: -1, Dir2: -1, Fd: fd, Name: name, Data: value})
	}
	return err
}

// Fremovexattr is fremovexattr, reported as OpRemovexattr.
func (f *FS) Fremovexattr(fd int, name string) error {
	err := fremovexattr(fd, name)
	if err == nil {
		f.note(Event{Op: OpRemovexattr, Dir: -1, Dir2: -1, Fd: fd, Name: name})
	}
	return err
}

// NewFile wraps fd like the package's NewFile; its writes, truncates,
// punched holes and fsyncs are reported.
func (f *FS) NewFile(fd int, st *unix.Stat_t) *ObservedFile {
	o := &ObservedFile{File: NewFile(fd, st), fs: f}
	if st != nil {
		o.dev, o.ino = uint64(st.Dev), st.Ino
	}
	return o
}

// ObservedFile is a File whose mutations an FS reports.
type ObservedFile struct {
	*File
	fs       *FS
	dev, ino uint64 // from NewFile's stat: an observer needs no fstat per write
}

// event is an event on o's fd.
func (o *ObservedFile) event(op Op) Event {
	return Event{Op: op, Dir: -1, Dir2: -1, Fd: o.fd, Dev: o.dev, Ino: o.ino}
}

// WriteAt writes p at off and reports OpWrite.
func (o *ObservedFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := o.File.WriteAt(p, off)
	if n > 0 && o.fs.observed() {
		ev := o.event(OpWrite)
		ev.Off, ev.Data = off, p[:n]
		o.fs.note(ev)
	}
	return n, err
}

// Truncate sets the size and reports OpTruncate.
func (o *ObservedFile) Truncate(size int64) error {
	err := o.File.Truncate(size)
	if err == nil {
		ev := o.event(OpTruncate)
		ev.Off = size
		o.fs.note(ev)
	}
	return err
}

// PunchHole punches [off, off+length) and reports OpPunch.
func (o *ObservedFile) PunchHole(off, length int64) error {
	err := o.File.PunchHole(off, length)
	if err == nil && length > 0 {
		ev := o.event(OpPunch)
		ev.Off, ev.Len = off, length
		o.fs.note(ev)
	}
	return err
}

// Sync fsyncs the file and reports OpFsync.
func (o *ObservedFile) Sync() error {
	err := o.File.Sync()
	if err == nil {
		o.fs.note(o.event(OpFsync))
	}
	return err
}
