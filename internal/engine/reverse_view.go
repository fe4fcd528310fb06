package engine

import (
	"fmt"
	"log"
	"path"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"golang.org/x/sys/unix"
)

// ReverseOptions say what one view of PLAINDIR shows.
type ReverseOptions struct {
	// Excludes are path.Match patterns; an entry whose relative plaintext
	// path or base name matches one is not shown (nor anything below it).
	Excludes []string
	// OneFileSystem stops the view at file system boundaries (like
	// rsync -x): a directory on another file system than PLAINDIR (a mount
	// point below it, such as the view's own mount point) is shown empty.
	OneFileSystem bool
	// Logger receives diagnostics (one line per failing path); nil
	// discards them.
	Logger *log.Logger
}

// ReverseView is PLAINDIR opened for one view: its root fd, from which
// every plaintext entry is reached with openat2(RESOLVE_BENEATH|
// RESOLVE_NO_SYMLINKS) and O_NOFOLLOW through internal/backing, so that a
// symlink in PLAINDIR is shown as a symlink and never followed; and the
// config bytes shown as encryptfs.conf. Its methods are safe for
// concurrent use; Close it after the view is unmounted.
type ReverseView struct {
	r        *Reverse
	rootfd   int
	rootDev  uint64 // PLAINDIR's st_dev, for oneFS
	config   []byte
	excludes []string
	oneFS    bool
	logger   *log.Logger
}

// Open opens PLAINDIR for a view with options o.
func (r *Reverse) Open(o ReverseOptions) (*ReverseView, error) {
	for _, pat := range o.Excludes {
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			return nil, fmt.Errorf("%w: %q", ErrPattern, pat)
		}
	}
	v := &ReverseView{
		r:        r,
		excludes: append([]string(nil), o.Excludes...), oneFS: o.OneFileSystem, logger: o.Logger,
	}
	var err error
	if v.rootfd, err = backing.OpenRoot(r.dir); err != nil {
		return nil, err
	}
	// The bytes the session unlocked, not the file read again: a config
	// swapped in between would be shown with keys that do not open it.
	// A session built from parameters (NewReverse, tests) has none.
	if v.config = r.config; v.config == nil {
		if v.config, err = backing.ReadFileAt(v.rootfd, ReverseConfigName, config.MaxFileSize); err != nil {
			backing.Close(v.rootfd)
			return nil, fmt.Errorf("reverse: read %s: %w", ReverseConfigName, err)
		}
	}
	st, err := backing.Fstat(v.rootfd)
	if err != nil {
		backing.Close(v.rootfd)
		return nil, err
	}
	v.rootDev = st.Dev
	return v, nil
}

// Close closes the PLAINDIR fd. Call it after the server has exited; the
// session's Close wipes the keys.
func (v *ReverseView) Close() error {
	return backing.Close(v.rootfd)
}

// Config returns the config bytes shown as encryptfs.conf.
func (v *ReverseView) Config() []byte { return v.config }

// Statfs reports PLAINDIR's file system.
func (v *ReverseView) Statfs() (unix.Statfs_t, error) {
	var s unix.Statfs_t
	err := unix.Fstatfs(v.rootfd, &s)
	return s, err
}

// beyondFS reports whether a directory with stat st is on another file
// system than PLAINDIR while the view stops at file system boundaries: it
// is then shown empty.
func (v *ReverseView) beyondFS(st *unix.Stat_t) bool { return v.oneFS && st.Dev != v.rootDev }

// Excluded reports whether the plaintext entry at rel is hidden: the
// reverse config itself (and its temporary file) in the root, or an entry
// matching an exclude pattern by relative path or base name.
func (v *ReverseView) Excluded(rel string) bool {
	if rel == ReverseConfigName || rel == ReverseConfigName+".tmp" {
		return true
	}
	base := path.Base(rel)
	for _, pat := range v.excludes {
		if ok, _ := path.Match(pat, rel); ok {
			return true
		}
		if ok, _ := path.Match(pat, base); ok {
			return true
		}
	}
	return false
}

// logf logs a diagnostic.
func (v *ReverseView) logf(format string, args ...any) {
	if v.logger != nil {
		v.logger.Printf(format, args...)
	}
}

// withParent opens the parent directory of the non-root rel and calls f
// with its fd and rel's base name.
func (v *ReverseView) withParent(rel string, f func(pfd int, base string) error) error {
	dir, base := splitRel(rel)
	pfd, err := backing.OpenDir(v.rootfd, dir)
	if err != nil {
		return err
	}
	defer backing.Close(pfd)
	return f(pfd, base)
}

// Lstat stats the plaintext object at rel ("" is PLAINDIR) without
// following a symlink.
func (v *ReverseView) Lstat(rel string) (st unix.Stat_t, err error) {
	if rel == "" {
		return backing.Fstat(v.rootfd)
	}
	err = v.withParent(rel, func(pfd int, base string) error {
		st, err = backing.Fstatat(pfd, base)
		return err
	})
	return st, err
}

// readlink reads the plaintext target of symlink rel.
func (v *ReverseView) readlink(rel string) (target string, err error) {
	err = v.withParent(rel, func(pfd int, base string) error {
		target, err = backing.Readlinkat(pfd, base)
		return err
	})
	return target, err
}

// configStat returns the attributes shown for encryptfs.conf: those of
// the reverse config file. The view serves the bytes read at mount time,
// so if the file has gone meanwhile it keeps showing them, with the root
// directory's owner and times and mode 0400.
func (v *ReverseView) configStat() unix.Stat_t {
	st, err := backing.Fstatat(v.rootfd, ReverseConfigName)
	if err != nil {
		v.logf("stat %s: %v (serving the config read at mount time)", ReverseConfigName, err)
		st, _ = backing.Fstat(v.rootfd)
		st.Mode = unix.S_IFREG | 0o400
	}
	return st
}

// CipherSize is the size a plaintext file of plain bytes shows in the
// view (Reverse.CipherSize).
func (v *ReverseView) CipherSize(plain int64) int64 { return v.r.CipherSize(plain) }

// InodeNumber is the keyed number of a view kind and a plaintext path
// (Reverse.InodeNumber).
func (v *ReverseView) InodeNumber(k ViewKind, rel string) uint64 { return v.r.InodeNumber(k, rel) }
