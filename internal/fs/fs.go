// Package fs is the forward-mode FUSE filesystem: go-fuse nodes whose every
// operation goes to the backing directory through internal/tree (names,
// directory IDs, symlinks, xattrs) and internal/core (file contents).
//
// It is the only package where errors become errnos (see errno.go).
//
// Backing access is always relative to a directory fd: a node's backing
// directory is opened from the CIPHERDIR root with openat2 and
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, and the entry is used with *at calls
// and O_NOFOLLOW. The backing path is recomputed from the plaintext path and
// the directory IDs cached in the nodes (a directory's ID never changes), so
// renames need no bookkeeping.
package fs

import (
	"log"
	"os"
	"sync"
	"sync/atomic"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/tree"
	fusefs "github.com/hanwen/go-fuse/v2/fs"
)

// Options configures the filesystem.
type Options struct {
	// SharedStorage: CIPHERDIR may change behind our back (another mount,
	// a sync tool), so the kernel must not keep page-cache contents across
	// opens (no FOPEN_KEEP_CACHE). The mount also sets zero timeouts.
	SharedStorage bool
	// ShowUndecryptable lists entries whose names do not decrypt (foreign
	// files, tampered or truncated names) as "<backing name>" +
	// tree.BadNameSuffix instead of leaving them out, so that they can be
	// read, renamed to a proper name, or removed (gocryptfs's -badname).
	ShowUndecryptable bool
	// Logger receives one line per corrupt object (path and error) and
	// other diagnostics; nil discards them.
	Logger *log.Logger
}

// Root is the root node of a mounted vault plus the state shared by all
// nodes: the tree, the CIPHERDIR root fd and the open-file table.
type Root struct {
	node
	tree   *tree.Tree
	rootfd int
	opts   Options
	euid   int // the daemon's uid: 0 means we chown new entries to the caller
	files  openFiles
	ops    atomic.Uint64 // requests served, for idle detection
	dirFDs atomic.Int64  // cached directory fds (node.fd)
	logged loggedSet
}

// NewRoot opens CIPHERDIR and reads its directory ID. Close releases it
// after the filesystem is unmounted.
func NewRoot(cipherDir string, t *tree.Tree, opts Options) (*Root, error) {
	fd, err := backing.OpenRoot(cipherDir)
	if err != nil {
		return nil, err
	}
	id, err := t.ReadDirID(fd)
	if err != nil {
		backing.Close(fd)
		return nil, err
	}
	r := &Root{tree: t, rootfd: fd, opts: opts, euid: os.Geteuid()}
	r.node.r = r
	r.node.dirID = id
	r.node.fd = fd // never closed by OnForget: the root is never forgotten
	r.files.m = map[fileKey]*openFile{}
	r.files.written = map[fileKey]struct{}{}
	return r, nil
}

// Close closes the CIPHERDIR fd. Call it after the server has exited.
func (r *Root) Close() error { return backing.Close(r.rootfd) }

// Activity returns the number of requests served so far and the number of
// open files, for idle auto-unmount: the mount is idle when the count does
// not move and nothing is open.
func (r *Root) Activity() (requests uint64, openFiles int) {
	r.files.mu.Lock()
	n := len(r.files.m)
	r.files.mu.Unlock()
	return r.ops.Load(), n
}

// maxCachedDirFDs bounds the directory fds kept open in nodes, well below
// the usual RLIMIT_NOFILE (Go raises the soft limit to the hard one).
const maxCachedDirFDs = 4096

// reserveDirFD reports whether one more directory fd may be cached.
func (r *Root) reserveDirFD() bool {
	if r.opts.SharedStorage {
		return false
	}
	if r.dirFDs.Add(1) > maxCachedDirFDs {
		r.dirFDs.Add(-1)
		return false
	}
	return true
}

// touch counts a request.
func (r *Root) touch() { r.ops.Add(1) }

// logf logs a diagnostic.
func (r *Root) logf(format string, args ...any) {
	if r.opts.Logger != nil {
		r.opts.Logger.Printf(format, args...)
	}
}

// loggedSet remembers which paths were already reported as corrupt, so that
// a broken file read a million times is logged once. It is bounded.
type loggedSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// first reports whether key is new (and records it).
func (s *loggedSet) first(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]struct{}{}
	}
	if _, ok := s.m[key]; ok {
		return false
	}
	if len(s.m) >= 10000 {
		return true // stop remembering, keep logging
	}
	s.m[key] = struct{}{}
	return true
}

var _ fusefs.InodeEmbedder = (*Root)(nil)
