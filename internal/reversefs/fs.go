// Package reversefs is the reverse-mode FUSE filesystem: a read-only view
// that shows an encrypted version of a plaintext directory (PLAINDIR), for
// encrypted backups. A copy of the view is a normal forward-mode vault with
// the same password (docs/reverse.md).
//
// Everything in the view is computed on the fly and deterministically from
// the plaintext: names with names.Cipher under derived directory IDs, file
// contents as header plus aes-256-siv chunks with derived nonces, symlink
// targets with derived nonces (internal/crypto/reverse). Nothing is written
// to PLAINDIR. Plaintext entries are reached from the PLAINDIR root fd with
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) and O_NOFOLLOW (through
// internal/backing), so a symlink in PLAINDIR is shown as a symlink and
// never followed.
package reversefs

import (
	"errors"
	"fmt"
	"log"
	"path"
	"runtime"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/crypto/reverse"
	"github.com/encryptfs/encryptfs/internal/fuseserver"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// ConfigName is the reverse config's name in PLAINDIR
// (config.ReverseFileName). The view hides it and shows its bytes in the
// view's root as encryptfs.conf, so that a copy of the view opens as a
// forward vault with the same password.
const ConfigName = config.ReverseFileName

// Errors.
var (
	// ErrCipher: reverse mode needs aes-256-siv (derived nonces repeat).
	ErrCipher = session.ErrReverseCipher
	// ErrPattern: an --exclude pattern is malformed.
	ErrPattern = errors.New("reverse: bad exclude pattern")
)

// Options configures the view.
type Options struct {
	// Excludes are path.Match patterns; an entry whose relative plaintext
	// path or base name matches one is not shown (nor anything below it).
	Excludes []string
	// ForceOwner, if set, is shown as the owner of every entry.
	ForceOwner *fuseserver.Owner
	// OneFileSystem stops the view at file system boundaries (like
	// rsync -x): a directory on another file system than PLAINDIR (a mount
	// point below it, such as the view's own mount point) is shown empty.
	OneFileSystem bool
	// Logger receives diagnostics (one line per failing path); nil
	// discards them.
	Logger *log.Logger
}

// Root is the view's root directory node plus the state shared by all
// nodes: the PLAINDIR fd, the ciphers and the config bytes shown as
// encryptfs.conf.
type Root struct {
	node
	rootfd   int
	suite    *content.Suite
	names    *names.Cipher
	links    *meta.Symlinks
	derive   *reverse.Deriver
	config   []byte
	excludes []string
	owner    *fuseserver.Owner
	oneFS    bool
	rootDev  uint64 // PLAINDIR's st_dev, for oneFS
	logger   *log.Logger
	engine   *core.Engine // seals file contents (core.ReverseFile)
}

// NewRoot opens the PLAINDIR of the reverse session s and takes the
// ciphers and the reverse config bytes (shown as encryptfs.conf) from s.
// Close releases it after the filesystem is unmounted.
func NewRoot(s *session.Reverse, o Options) (*Root, error) {
	for _, pat := range o.Excludes {
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			return nil, fmt.Errorf("%w: %q", ErrPattern, pat)
		}
	}
	r := &Root{
		suite: s.Suite(), names: s.Names(), links: s.Symlinks(), derive: s.Deriver(),
		excludes: append([]string(nil), o.Excludes...), owner: o.ForceOwner, oneFS: o.OneFileSystem, logger: o.Logger,
	}
	var err error
	if r.rootfd, err = backing.OpenRoot(s.Dir()); err != nil {
		return nil, err
	}
	// The bytes the session unlocked, not the file read again: a config
	// swapped in between would be shown with keys that do not open it.
	// A session built from parameters (NewReverse, tests) has none.
	if r.config = s.Config(); r.config == nil {
		if r.config, err = backing.ReadFileAt(r.rootfd, ConfigName, config.MaxFileSize); err != nil {
			backing.Close(r.rootfd)
			return nil, fmt.Errorf("reverse: read %s: %w", ConfigName, err)
		}
	}
	st, err := backing.Fstat(r.rootfd)
	if err != nil {
		backing.Close(r.rootfd)
		return nil, err
	}
	r.rootDev = st.Dev
	r.node = node{r: r, kind: kindDir}
	r.engine = core.NewEngine(r.suite, engineOptions())
	return r, nil
}

// minParallelChunks is the smallest read, in chunks, that the engine seals
// on several workers. Reverse reads only seal (no backing write, no
// read-modify-write), so splitting pays off sooner than for forward
// requests: with 16 KiB chunks, 128 KiB reads (8-9 chunks) on two cores ran
// at about 1.6x the sequential speed (BenchmarkRead, medians).
const minParallelChunks = 4

// engineOptions are the engine options of the view: the default worker
// pool, bounded by GOMAXPROCS as the view's sealing was before it moved
// into the engine, and split from minParallelChunks chunks on.
func engineOptions() core.Options {
	opts := core.DefaultOptions()
	opts.Parallel.MaxWorkers = runtime.GOMAXPROCS(0)
	opts.Parallel.MinChunks = minParallelChunks
	return opts
}

// Close closes the PLAINDIR fd. Call it after the server has exited; the
// session's Close wipes the reverse key.
func (r *Root) Close() error {
	return backing.Close(r.rootfd)
}

// beyondFS reports whether a directory with stat st is on another file
// system than PLAINDIR while the view stops at file system boundaries: it
// is then shown empty.
func (r *Root) beyondFS(st *unix.Stat_t) bool { return r.oneFS && st.Dev != r.rootDev }

// excluded reports whether the plaintext entry at rel is hidden: the
// reverse config itself (and its temporary file) in the root, or an entry
// matching an exclude pattern by relative path or base name.
func (r *Root) excluded(rel string) bool {
	if rel == ConfigName || rel == ConfigName+".tmp" {
		return true
	}
	base := path.Base(rel)
	for _, pat := range r.excludes {
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
func (r *Root) logf(format string, args ...any) {
	if r.logger != nil {
		r.logger.Printf(format, args...)
	}
}

var _ fs.InodeEmbedder = (*Root)(nil)
