// Package forwardfs is the forward-mode FUSE filesystem: go-fuse nodes whose every
// operation goes to the vault through the session's engine
// (internal/engine: names, directory IDs, symlinks, xattrs, and file
// contents through its open-file table and place-checked open).
//
// It is the only package where errors become errnos (see errno.go).
//
// Backing access is always relative to a directory fd: a node's backing
// directory is opened from the CIPHERDIR root with openat2 and
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, and the entry is used with *at calls
// and O_NOFOLLOW. The backing path is recomputed from the plaintext path and
// the directory IDs cached in the nodes (a directory's ID never changes), so
// renames need no bookkeeping.
package forwardfs

import (
	"log"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Options configures the filesystem.
type Options struct {
	// SharedStorage: CIPHERDIR may change behind our back (another mount,
	// a sync tool), so the kernel must not keep page-cache contents across
	// opens (no FOPEN_KEEP_CACHE). The mount also sets zero timeouts.
	SharedStorage bool
	// ShowUndecryptable lists entries whose names do not decrypt (foreign
	// files, tampered or truncated names) as "<backing name>" +
	// session.BadNameSuffix instead of leaving them out, so that they can be
	// read, renamed to a proper name, or removed (gocryptfs's -badname).
	ShowUndecryptable bool
	// ForceOwner, if set, is shown as the owner of every entry.
	ForceOwner *fuse.Owner
	// Logger receives one line per corrupt object (path and error) and
	// other diagnostics; nil discards them.
	Logger *log.Logger
	// ListingCache: for this long after a directory was listed, the
	// kernel may serve its listing from its page cache (readdir.go); it
	// must stay below the entry and attribute timeouts. 0: never (as with
	// SharedStorage).
	ListingCache time.Duration
	// LookupHook, a test hook, is called at the start of every LOOKUP
	// with the name looked up; nil: none. The panic tests make it panic
	// on one name to show that the mount answers that request with EIO
	// and goes on serving (internal/mount's PanicHandler).
	LookupHook func(name string)
}

// Root is the root node of a mounted vault plus the state shared by all
// nodes: the tree, the CIPHERDIR root fd and the open-file table.
type Root struct {
	node
	ev     *engine.Vault // the session's engine: the open-file table, the place-checked open
	rootfd int
	opts   Options
	euid   int // the daemon's uid: 0 means we chown new entries to the caller
	files  openFiles
	ops    atomic.Uint64 // requests served, for idle detection
	dirFDs dirFDSet      // the nodes that cache a directory fd (node.fd)
	logged loggedSet
	moved  movedLinks // numbers of renamed symlinks (linkino.go)
	// noXattrs is non-nil (engine.IsNoXattrs) when the backing store keeps
	// no extended attributes (probed once, in NewRoot): the mount then
	// looks like a file system without them (see xattr.go).
	noXattrs error
	// notifies counts the drop-behind notifications in flight
	// (dropbehind.go); Close waits for them.
	notifies sync.WaitGroup
}

// NewRoot opens the CIPHERDIR of session s and reads its directory ID.
// Close releases it after the filesystem is unmounted; s stays the
// caller's to close after that.
func NewRoot(s *session.Session, opts Options) (*Root, error) {
	fd, err := s.Vault().OpenRootFD()
	if err != nil {
		return nil, err
	}
	ev := s.Vault()
	id, err := ev.ReadDirID(fd, ev.RootPlace())
	if err != nil {
		engine.CloseFD(fd)
		return nil, err
	}
	r := &Root{ev: ev, rootfd: fd, opts: opts, euid: os.Geteuid()}
	if err := engine.ProbeXattrs(fd); err != nil {
		if !engine.IsNoXattrs(err) {
			engine.CloseFD(fd)
			return nil, err
		}
		r.noXattrs = err
		r.logf("%v: extended attributes are off in this mount", err)
	}
	r.node.r = r
	setSides(&r.node)
	r.node.dirID = id
	r.node.fd = fd // never closed by OnForget: the root is never forgotten
	r.files.init(r.ev)
	return r, nil
}

// Close closes the CIPHERDIR fd, the directory fds still cached in nodes
// (see dirFDSet) and the files still open: RELEASE is sent asynchronously,
// and an unmount can overtake the last ones. Call it after the server has
// exited, when no handle can be used any more.
func (r *Root) Close() error {
	r.notifies.Wait() // the connection is gone: they fail at once
	r.files.closeAll()
	r.dirFDs.mu.Lock()
	nodes := make([]*node, 0, len(r.dirFDs.m))
	for n := range r.dirFDs.m {
		nodes = append(nodes, n)
	}
	r.dirFDs.m = nil
	r.dirFDs.mu.Unlock()
	for _, n := range nodes {
		n.mu.Lock()
		if n.fd >= 0 {
			engine.CloseFD(n.fd)
			n.fd = -1
		}
		n.mu.Unlock()
	}
	return engine.CloseFD(r.rootfd)
}

// Activity returns the number of requests served so far and the number of
// open files, for idle auto-unmount: the mount is idle when the count does
// not move and nothing is open.
func (r *Root) Activity() (requests uint64, openFiles int) {
	return r.ops.Load(), r.files.count()
}

// maxCachedDirFDs bounds the directory fds kept open in nodes, well below
// the usual RLIMIT_NOFILE (Go raises the soft limit to the hard one).
const maxCachedDirFDs = 4096

// dirFDSet is the set of nodes that cache a directory fd. The kernel does
// not forget every node when the file system is unmounted, so Close closes
// the fds still cached (else they would hold the backing file system busy
// in a process that goes on, as the tests do).
type dirFDSet struct {
	mu sync.Mutex
	m  map[*node]struct{}
}

// reserveDirFD reports whether directory node n may cache one more fd, and
// records it if so.
func (r *Root) reserveDirFD(n *node) bool {
	if r.opts.SharedStorage {
		return false
	}
	s := &r.dirFDs
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= maxCachedDirFDs {
		return false
	}
	if s.m == nil {
		s.m = make(map[*node]struct{})
	}
	s.m[n] = struct{}{}
	return true
}

// releaseDirFD forgets that n caches an fd.
func (r *Root) releaseDirFD(n *node) {
	r.dirFDs.mu.Lock()
	delete(r.dirFDs.m, n)
	r.dirFDs.mu.Unlock()
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

var _ fs.InodeEmbedder = (*Root)(nil)
