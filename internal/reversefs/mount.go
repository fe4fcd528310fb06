package reversefs

import (
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/encryptfs/encryptfs/internal/fuseserver"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// MountOptions describes one reverse mount.
type MountOptions struct {
	PlainDir, MountPoint string
	Root                 *Root         // from NewRoot; closed after unmount or on a failed Mount
	AllowOther           bool          // other users may access the mount (the kernel checks permissions)
	Debug                bool          // log every FUSE request and reply to Logger
	FsName               string        // shown in /proc/mounts; default PlainDir
	ExtraOptions         []string      // more -o options for the kernel
	CacheTimeout         time.Duration // entry and attribute cache; 0: DefaultCacheTimeout, < 0: no caching
	Logger               *log.Logger   // diagnostics; nil discards them
}

// DefaultCacheTimeout bounds how stale the view may be after PLAINDIR
// changes: one second, as gocryptfs uses. Forward mode keeps its caches for
// 30 s (internal/mount's cacheTimeout) because it is normally the only
// writer of CIPHERDIR; here PLAINDIR is expected to change behind the
// mount's back, so the view is kept fresh.
const DefaultCacheTimeout = time.Second

// maxRead is the largest READ request: 1 MiB (the kernel's limit here),
// so that large reads seal several chunks in parallel.
const maxRead = 1 << 20

// ErrNoRoot is returned when MountOptions.Root is nil.
var ErrNoRoot = errors.New("reverse: no root")

// Server is a running reverse mount: Wait, Unmount and UnmountOnSignal come
// from the lifecycle it shares with the forward mount.
type Server struct {
	*fuseserver.Server
	opts MountOptions
}

// Mount mounts the read-only view and returns once the kernel has it ready.
func Mount(opts MountOptions) (*Server, error) {
	root := opts.Root
	if root == nil {
		return nil, ErrNoRoot
	}
	timeout := opts.CacheTimeout
	switch {
	case timeout == 0:
		timeout = DefaultCacheTimeout
	case timeout < 0:
		timeout = 0
	}
	fsName := opts.FsName
	if fsName == "" {
		fsName = opts.PlainDir
	}
	rootSt, err := root.lstat("")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("reverse: stat %s: %w", opts.PlainDir, err)
	}
	rootAttr := root.stableAttr(viewEntry{kind: kindDir, st: rootSt})
	fopts := &fs.Options{
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		Logger:          opts.Logger,
		NullPermissions: true, // mode 0 stays 0
		RootStableAttr:  &rootAttr,
		MountOptions: fuse.MountOptions{
			AllowOther:  opts.AllowOther,
			Options:     append([]string{"ro", "default_permissions"}, opts.ExtraOptions...),
			FsName:      fsName,
			Name:        "encryptfs-reverse", // type "fuse.encryptfs-reverse"
			MaxWrite:    maxRead,             // go-fuse sets max_read to this
			Debug:       opts.Debug,
			Logger:      opts.Logger,
			DirectMount: true, // fall back to fusermount3 if this fails
		},
	}
	srv, err := fuse.NewServer(fs.NewNodeFS(root, fopts), opts.MountPoint, &fopts.MountOptions)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("reverse: mount: %w", err)
	}
	s := &Server{opts: opts}
	logf := func(format string, args ...any) {
		if opts.Logger != nil {
			opts.Logger.Printf(format, args...)
		}
	}
	s.Server, err = fuseserver.Start(srv, opts.MountPoint, logf, func() { root.Close() })
	if err != nil {
		return nil, fmt.Errorf("reverse: mount: %w", err)
	}
	return s, nil
}
