package engine

import (
	"errors"
	"runtime"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/crypto/reverse"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/fileengine"
)

// ReverseConfigName is the reverse config's name in PLAINDIR
// (config.ReverseFileName). The view hides it and shows its bytes in the
// view's root as encryptfs.conf, so that a copy of the view opens as a
// forward vault with the same password.
const ReverseConfigName = config.ReverseFileName

// Errors of the reverse view.
var (
	// ErrPattern: an --exclude pattern is malformed.
	ErrPattern = errors.New("reverse: bad exclude pattern")
	// ErrChanged: a plaintext file got shorter while it was open, so the
	// ciphertext its size at open promised can no longer be produced
	// (fileengine.ErrChanged).
	ErrChanged = fileengine.ErrChanged
	// ErrNoEntry: the view has no entry of that name in that directory
	// (not a name the directory's key decrypts, an excluded entry, a
	// directory beyond the file system boundary). ENOENT at the view.
	ErrNoEntry = fault.New(fault.NotFound, "reverse: no such entry in the view")
	// ErrStale: the plaintext object behind a view entry was replaced by
	// another type of file, or changed so that the virtual file found for
	// it no longer exists (a name or target that got short). ESTALE at
	// the view, which has no fault kind of its own.
	ErrStale = errors.New("reverse: the plaintext entry changed")
	// ErrNotVirtual: content was asked of a kind that is no virtual file.
	// EINVAL at the view.
	ErrNotVirtual = fault.New(fault.Invalid, "reverse: not a virtual file")
)

// Reverse is the engine of a reverse session: everything the read-only
// encrypted view of a plaintext directory (PLAINDIR, docs/reverse.md)
// computes, deterministically from the plaintext and the reverse key:
// directory and file IDs derived from paths, encrypted names and their
// long-name sidecars, sealed symlink targets, the sealed contents, the
// config shown as encryptfs.conf and the size arithmetic. The session
// builds it from its ciphers (session.Reverse.View) and wipes their keys
// on Close; it does no I/O of its own: Open opens PLAINDIR for one view.
type Reverse struct {
	dir    string
	suite  *content.Suite
	names  *names.Cipher
	links  *meta.Symlinks
	derive *reverse.Deriver
	core   *fileengine.Engine // seals file contents (fileengine.ReverseFile)
	config []byte             // the config as unlocked; nil: read at Open
}

// NewReverse builds the reverse engine of PLAINDIR dir from the session's
// ciphers (whose keys it keeps until Wipe) and the config bytes the
// session unlocked (nil when it was built from parameters: Open reads the
// file then). It reads nothing from dir.
func NewReverse(dir string, suite *content.Suite, n *names.Cipher, l *meta.Symlinks, d *reverse.Deriver, config []byte) *Reverse {
	return &Reverse{
		dir: dir, suite: suite, names: n, links: l, derive: d, config: config,
		core: fileengine.NewEngine(suite, reverseCoreOptions()),
	}
}

// minParallelChunks is the smallest read, in chunks, that the engine seals
// on several workers. Reverse reads only seal (no backing write, no
// read-modify-write), so splitting pays off sooner than for forward
// requests: with 16 KiB chunks, 128 KiB reads (8-9 chunks) on two cores ran
// at about 1.6x the sequential speed (BenchmarkRead, medians).
const minParallelChunks = 4

// reverseCoreOptions are the content engine's options for the view: the
// default worker pool, bounded by GOMAXPROCS as the view's sealing was
// before it moved into the engine, and split from minParallelChunks chunks
// on.
func reverseCoreOptions() fileengine.Options {
	opts := fileengine.DefaultOptions()
	opts.Parallel.MaxWorkers = runtime.GOMAXPROCS(0)
	opts.Parallel.MinChunks = minParallelChunks
	return opts
}

// Dir returns PLAINDIR.
func (r *Reverse) Dir() string { return r.dir }

// CipherSize is the size a plaintext file of plain bytes shows in the
// view: the header plus the sealed chunks.
func (r *Reverse) CipherSize(plain int64) int64 { return r.suite.CipherSize(plain) }

// InodeNumber is the keyed number of a view kind and a plaintext path
// (reverse.Deriver.InodeNumber): stable across mounts with the same key,
// and no use for testing guesses of plaintext paths without it.
func (r *Reverse) InodeNumber(k ViewKind, rel string) uint64 {
	return r.derive.InodeNumber(byte(k), rel)
}
