package reverse

import (
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
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
// changes: one second, as in forward mode.
const DefaultCacheTimeout = time.Second

// maxRead is the largest READ request: 1 MiB (the kernel's limit here),
// so that large reads seal several chunks in parallel.
const maxRead = 1 << 20

// ErrNoRoot is returned when MountOptions.Root is nil.
var ErrNoRoot = errors.New("reverse: no root")

// Server is a running reverse mount.
type Server struct {
	srv    *fuse.Server
	opts   MountOptions
	once   sync.Once
	waited chan struct{}
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
	rootAttr := stableAttr(viewEntry{kind: kindDir, st: rootSt})
	fopts := &fusefs.Options{
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
	srv, err := fuse.NewServer(fusefs.NewNodeFS(root, fopts), opts.MountPoint, &fopts.MountOptions)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("reverse: mount: %w", err)
	}
	s := &Server{srv: srv, opts: opts, waited: make(chan struct{})}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		root.Close()
		return nil, fmt.Errorf("reverse: mount: %w", err)
	}
	go func() {
		srv.Wait()
		root.Close()
		close(s.waited)
	}()
	return s, nil
}

// Wait blocks until the view is unmounted (by Unmount, a signal, or
// `fusermount3 -u` from outside).
func (s *Server) Wait() { <-s.waited }

// Unmount unmounts and waits for the server to exit. It fails (EBUSY)
// while the mount is in use.
func (s *Server) Unmount() error {
	if err := s.srv.Unmount(); err != nil {
		select {
		case <-s.waited:
			return nil // already unmounted
		default:
		}
		return fmt.Errorf("reverse: unmount %s: %w", s.opts.MountPoint, err)
	}
	s.Wait()
	return nil
}

// UnmountOnSignal unmounts on SIGINT or SIGTERM (retrying on the next
// signal while the mount is busy). stop undoes it.
func (s *Server) UnmountOnSignal() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-s.waited:
				return
			case sig := <-ch:
				if err := s.srv.Unmount(); err != nil && s.opts.Logger != nil {
					s.opts.Logger.Printf("%v: unmount %s failed: %v", sig, s.opts.MountPoint, err)
				}
			}
		}
	}()
	return func() {
		s.once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}
