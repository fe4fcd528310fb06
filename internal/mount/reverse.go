package mount

import (
	"cmp"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/encryptfs/encryptfs/internal/fuseserver"
	"github.com/encryptfs/encryptfs/internal/reversefs"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/transport"
)

// ReverseViewOptions say what the reverse view of a PLAINDIR shows
// (mount --exclude, --force-owner, --one-file-system).
type ReverseViewOptions struct {
	Excludes      []string    // path.Match patterns of the entries hidden (relative path or base name)
	ForceOwner    *Owner      // shown as the owner of every entry; nil: the real owners
	OneFileSystem bool        // a directory on another file system than PLAINDIR shows empty
	Logger        *log.Logger // one line per failing path; nil discards them
}

// ErrPattern: an exclude pattern is malformed (a usage error, found before
// anything is opened).
var ErrPattern = reversefs.ErrPattern

// NewReverseRoot builds the reverse view's root of the unlocked reverse
// session s, for ReverseOptions.Root. A bad pattern is ErrPattern; any
// other error is PLAINDIR's.
func NewReverseRoot(s *session.Reverse, o ReverseViewOptions) (*reversefs.Root, error) {
	return reversefs.NewRoot(s, reversefs.Options{
		Excludes: o.Excludes, ForceOwner: o.ForceOwner.fuseOwner(), OneFileSystem: o.OneFileSystem, Logger: o.Logger,
	})
}

// ReverseOptions describes one reverse mount: the read-only encrypted
// view of PlainDir.
type ReverseOptions struct {
	PlainDir, MountPoint string
	Root                 *reversefs.Root // from NewReverseRoot; closed after unmount or on a failed MountReverse
	AllowOther           bool            // other users may access the mount (the kernel checks permissions)
	Debug                bool            // log every FUSE request and reply to Logger
	FsName               string          // shown in /proc/mounts; default PlainDir
	ExtraOptions         []string        // more -o options for the kernel
	CacheTimeout         time.Duration   // entry and attribute cache; 0: ReverseCacheTimeout, < 0: no caching
	Logger               *log.Logger     // diagnostics; nil discards them
}

// ReverseCacheTimeout bounds how stale the view may be after PLAINDIR
// changes: one second, as gocryptfs uses. Forward mode keeps its caches
// for 30 s (cacheTimeout) because it is normally the only writer of
// CIPHERDIR; here PLAINDIR is expected to change behind the mount's back,
// so the view is kept fresh.
const ReverseCacheTimeout = time.Second

// maxRead is the largest READ request of the view: 1 MiB (the kernel's
// limit here), so that large reads seal several chunks in parallel.
const maxRead = 1 << 20

// ErrNoRoot is returned when ReverseOptions.Root is nil.
var ErrNoRoot = errors.New("reverse: no root")

// ReverseServer is a running reverse mount: Wait, Unmount and
// UnmountOnSignal come from the lifecycle it shares with the forward
// mount.
type ReverseServer struct {
	*fuseserver.Server
	conn *transport.Mount
}

// Waiters is the number of the transport's threads that wait in the
// kernel for requests (transport.Mount.Waiters).
func (s *ReverseServer) Waiters() int { return s.conn.Waiters() }

// Transport says what serves the view's requests: "classic".
func (s *ReverseServer) Transport() string { return s.conn.Transport }

// MountReverse mounts the read-only view and returns once the kernel has
// it ready.
func MountReverse(opts ReverseOptions) (*ReverseServer, error) {
	root := opts.Root
	if root == nil {
		return nil, ErrNoRoot
	}
	timeout := cmp.Or(opts.CacheTimeout, ReverseCacheTimeout)
	if timeout < 0 {
		timeout = 0
	}
	rootAttr, err := root.RootAttr()
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("reverse: stat %s: %w", opts.PlainDir, err)
	}
	srv, conn, err := serve(root, serverConfig{
		mountPoint:   opts.MountPoint,
		fsName:       cmp.Or(opts.FsName, opts.PlainDir),
		typeName:     "encryptfs-reverse", // type "fuse.encryptfs-reverse"
		options:      append([]string{"ro", "default_permissions"}, opts.ExtraOptions...),
		allowOther:   opts.AllowOther,
		debug:        opts.Debug,
		cacheTimeout: timeout,
		maxIO:        maxRead,
		rootAttr:     &rootAttr,
		// The view serves sealing reads on the engine's worker pool; the
		// io_uring transport is wired for the forward mount only so far.
		transport: transport.Classic,
		logger:    opts.Logger,
	}, func() { root.Close() })
	if err != nil {
		return nil, fmt.Errorf("reverse: mount: %w", err)
	}
	return &ReverseServer{Server: srv, conn: conn}, nil
}
