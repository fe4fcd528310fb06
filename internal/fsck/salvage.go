package fsck

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/encryptfs/encryptfs/internal/engine"
	"golang.org/x/sys/unix"
)

// UndecryptablePrefix starts the salvage name of an entry whose name
// cannot be decrypted: the prefix and then its backing name.
const UndecryptablePrefix = "UNDECRYPTABLE-"

// undecryptableName is the salvage name of backing entry bn, shortened
// with a hash to fit NAME_MAX.
func undecryptableName(bn string) string {
	n := UndecryptablePrefix + bn
	if len(n) <= 255 {
		return n
	}
	sum := sha256.Sum256([]byte(bn))
	return n[:200] + "-" + hex.EncodeToString(sum[:8])
}

// salvager writes the plaintext copy. All I/O in it goes through directory
// fds of the salvage tree, as on the vault side.
type salvager struct {
	out     *engine.Output // writes the salvage tree (outside CIPHERDIR)
	root    *destDir
	asRoot  bool              // running as root: copy owners too
	savedAs map[string]string // backing path -> salvage path
}

// destDir is an open directory of the salvage tree.
type destDir struct {
	dir *engine.OutDir
	rel string // relative to the salvage root ("." for the root)
}

func (d *destDir) close() { d.dir.Close() }

// destFile is a regular file being written in the salvage tree.
type destFile struct {
	f   *os.File
	rel string
	err error // first write error (reported once)
}

// newSalvager creates (or accepts an empty) dest outside cipherDir.
func newSalvager(cipherDir, dest string) (*salvager, error) {
	if insideDir(dest, cipherDir) || insideDir(cipherDir, dest) {
		return nil, fmt.Errorf("%w: %s and CIPHERDIR %s overlap", ErrSalvageDir, dest, cipherDir)
	}
	if err := os.Mkdir(dest, 0o700); err != nil {
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%w: %w", ErrSalvageDir, err)
		}
		d, err := os.Open(dest)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSalvageDir, err)
		}
		names, err := d.Readdirnames(1)
		d.Close()
		if len(names) > 0 {
			return nil, fmt.Errorf("%w: %s is not empty", ErrSalvageDir, dest)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %w", ErrSalvageDir, err)
		}
	}
	out := engine.NewOutput()
	root, err := out.OpenRoot(dest)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSalvageDir, err)
	}
	return &salvager{out: out, root: &destDir{dir: root, rel: "."}, asRoot: os.Geteuid() == 0, savedAs: make(map[string]string)}, nil
}

func (s *salvager) close() { s.root.close() }

// fail records a salvage error.
func (s *salvager) fail(rep *Report, rel string, what string, err error) {
	rep.SalvageErrors = append(rep.SalvageErrors, fmt.Sprintf("%s: %s: %v", rel, what, err))
}

// unique calls create with name, then name~1, name~2 ... while it fails
// with EEXIST (a plaintext name can equal an UNDECRYPTABLE- name or a
// conflict copy's name).
func unique(name string, create func(string) error) (string, error) {
	try := name
	for i := 1; ; i++ {
		err := create(try)
		if !errors.Is(err, unix.EEXIST) || i > 100 {
			return try, err
		}
		suffix := "~" + strconv.Itoa(i)
		try = name[:min(len(name), 255-len(suffix))] + suffix
	}
}

// mkdir creates a subdirectory (0700 until finishDir).
func (s *salvager) mkdir(rep *Report, parent *destDir, name string, pl place) *destDir {
	name, err := unique(name, func(n string) error { return parent.dir.Mkdir(n, 0o700) })
	rel := joinCipher(parent.rel, name)
	if err != nil {
		s.fail(rep, rel, "mkdir", err)
		return nil
	}
	sub, err := parent.dir.Sub(name)
	if err != nil {
		s.fail(rep, rel, "open", err)
		return nil
	}
	s.savedAs[pl.cipher] = rel
	return &destDir{dir: sub, rel: rel}
}

// createFile creates a regular file (0600 until finishFile).
func (s *salvager) createFile(rep *Report, parent *destDir, name string, pl place) *destFile {
	fd := -1
	name, err := unique(name, func(n string) error {
		var err error
		fd, err = parent.dir.Create(n, 0o600)
		return err
	})
	rel := joinCipher(parent.rel, name)
	if err != nil {
		s.fail(rep, rel, "create", err)
		return nil
	}
	s.savedAs[pl.cipher] = rel
	return &destFile{f: os.NewFile(uintptr(fd), rel), rel: rel}
}

// write stores plaintext p at off, leaving all-zero blocks as holes
// (finishFile sets the size, so holes and bad chunks read as zeros).
func (d *destFile) write(s *salvager, rep *Report, p []byte, off int64) {
	const block = 64 << 10
	for len(p) > 0 && d.err == nil {
		n := min(len(p), block)
		if !allZero(p[:n]) {
			if _, err := d.f.WriteAt(p[:n], off); err != nil {
				d.err = err
				s.fail(rep, d.rel, "write", err)
			}
		}
		p, off = p[n:], off+int64(n)
	}
}

// allZero reports whether b is all zero bytes.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// finishFile sets size, mode, owner, xattrs and times, and closes the file.
func (s *salvager) finishFile(rep *Report, d *destFile, size int64, st unix.Stat_t, xs []plainXattr) {
	defer d.f.Close()
	fd := int(d.f.Fd())
	if err := d.f.Truncate(size); err != nil {
		s.fail(rep, d.rel, "truncate", err)
	}
	s.setAttrs(rep, fd, d.rel, st, xs)
}

// setAttrs copies xattrs, owner, mode and times to the open fd.
func (s *salvager) setAttrs(rep *Report, fd int, rel string, st unix.Stat_t, xs []plainXattr) {
	for _, x := range xs {
		if err := s.out.Setxattr(fd, x.name, x.value); err != nil {
			s.fail(rep, rel, "setxattr "+x.name, err)
		}
	}
	if s.asRoot {
		if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
			s.fail(rep, rel, "chown", err)
		}
	}
	// After chown, which clears set-ID bits.
	if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
		s.fail(rep, rel, "chmod", err)
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if err := unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH); err != nil {
		s.fail(rep, rel, "set times", err)
	}
}

// finishDir copies a directory's attributes, after its entries were
// written (which moved its mtime). The salvage root keeps its own mode
// and times (the report is still to be written into it) but gets the
// root's xattrs.
func (s *salvager) finishDir(rep *Report, d *destDir, st unix.Stat_t, xs []plainXattr) {
	if d.rel == "." {
		for _, x := range xs {
			if err := s.out.Setxattr(d.dir.Fd(), x.name, x.value); err != nil {
				s.fail(rep, d.rel, "setxattr "+x.name, err)
			}
		}
		return
	}
	s.setAttrs(rep, d.dir.Fd(), d.rel, st, xs)
}

// link makes another hard link to an already salvaged file.
func (s *salvager) link(rep *Report, first string, parent *destDir, name string, pl place) {
	if first == "" {
		return
	}
	name, err := unique(name, func(n string) error { return parent.dir.Link(s.root.dir, first, n) })
	rel := joinCipher(parent.rel, name)
	if err != nil {
		s.fail(rep, rel, "link to "+first, err)
		return
	}
	s.savedAs[pl.cipher] = rel
}

// symlink writes a decrypted symlink.
func (s *salvager) symlink(rep *Report, parent *destDir, name, target string, st unix.Stat_t, pl place) {
	name, err := unique(name, func(n string) error { return parent.dir.Symlink(target, n) })
	rel := joinCipher(parent.rel, name)
	if err != nil {
		s.fail(rep, rel, "symlink", err)
		return
	}
	s.savedAs[pl.cipher] = rel
	s.entryAttrs(rep, parent, name, rel, st, false)
}

// node recreates a fifo, socket or device node.
func (s *salvager) node(rep *Report, parent *destDir, name string, st unix.Stat_t, pl place) {
	name, err := unique(name, func(n string) error { return parent.dir.Mknod(n, st.Mode, st.Rdev) })
	rel := joinCipher(parent.rel, name)
	if err != nil {
		s.fail(rep, rel, "mknod", err)
		return
	}
	s.savedAs[pl.cipher] = rel
	s.entryAttrs(rep, parent, name, rel, st, true)
}

// entryAttrs sets owner, mode (not for symlinks) and times by name.
func (s *salvager) entryAttrs(rep *Report, parent *destDir, name, rel string, st unix.Stat_t, chmod bool) {
	if s.asRoot {
		if err := parent.dir.Chown(name, int(st.Uid), int(st.Gid)); err != nil {
			s.fail(rep, rel, "chown", err)
		}
	}
	if chmod {
		if err := parent.dir.Chmod(name, st.Mode&0o7777); err != nil {
			s.fail(rep, rel, "chmod", err)
		}
	}
	if err := parent.dir.SetTimes(name, [2]unix.Timespec{st.Atim, st.Mtim}); err != nil {
		s.fail(rep, rel, "set times", err)
	}
}

// writeReport fills in SalvagedAs and writes the text report at the top of
// the salvage tree.
func (s *salvager) writeReport(rep *Report) error {
	for i := range rep.Problems {
		p := &rep.Problems[i]
		if rel, ok := s.savedAs[p.CipherPath]; ok {
			p.SalvagedAs = rel
		}
	}
	fd := -1
	name, err := unique(SalvageReportName, func(n string) error {
		var err error
		fd, err = s.root.dir.Create(n, 0o600)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(rep.Salvage, name))
	werr := WriteText(f, rep)
	return errors.Join(werr, f.Close())
}
