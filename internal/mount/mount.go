// Package mount builds and runs the FUSE servers of both modes: Mount for
// a forward-mode vault (internal/forwardfs), MountReverse for the
// read-only encrypted view of a plaintext directory (internal/reversefs).
// It parses the mount options the CLI takes (ParseOwner for
// --force-owner, ParseTransport for --transport), builds the reverse
// view's root (NewReverseRoot), chooses mount options and cache timeouts,
// and runs the idle auto-unmount; the server lifecycle (clean unmount on
// signals) is internal/fuseserver's. It holds no global state: everything lives in the
// servers it returns.
package mount

import (
	"cmp"
	"errors"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/encryptfs/encryptfs/internal/forwardfs"
	"github.com/encryptfs/encryptfs/internal/fuseserver"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/transport"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Options describes one mount.
type Options struct {
	Session           *session.Session // the unlocked vault; its Dir is CIPHERDIR
	MountPoint        string
	ReadOnly          bool
	AllowOther        bool              // other users may access the mount (permissions are then checked by the kernel: default_permissions)
	SharedStorage     bool              // CIPHERDIR may change behind our back: no kernel caching
	ShowUndecryptable bool              // list entries whose names do not decrypt (see fs.Options)
	ForceOwner        *Owner            // shown as the owner of every entry; nil: the real owners
	Debug             bool              // log every FUSE request and reply to Logger
	Idle              time.Duration     // unmount after this long without requests and open files; 0: never
	FsName            string            // shown in /proc/mounts; default Session.Dir()
	ExtraOptions      []string          // more -o options for the kernel
	Transport         Transport         // auto (default), uring or classic
	Logger            *log.Logger       // diagnostics; nil discards them
	LookupHook        func(name string) // test hook: forwardfs.Options.LookupHook
}

// ErrNoSession is returned when Options.Session is nil.
var ErrNoSession = errors.New("mount: no session")

// Timeouts of the kernel's entry, attribute and negative-lookup caches.
// We are normally the only writer of CIPHERDIR, and every change made
// through the mount updates or invalidates those caches itself (the kernel
// invalidates the attributes of a changed directory, of a written, linked,
// unlinked or renamed file, and drops unlinked and renamed entries), so
// they can be kept long. 30 s (as securefs uses) instead of 1 s (as
// gocryptfs uses) measured: md5sum, rsync -an and rm -rf of a 38k-file
// tree right after its untar send one LOOKUP or GETATTR less per file.
// What it costs: a change made to CIPHERDIR behind the mount's back (which
// is what SharedStorage is for; it sets all three to zero) may stay unseen
// for up to 30 s.
const cacheTimeout = 30 * time.Second

// maxWrite is the largest WRITE request: 1 MiB, the kernel's limit here
// (max_pages 256), which keeps the engine's bulk path busy.
const maxWrite = 1 << 20

// Server is a running mount: Wait, Unmount and UnmountOnSignal come from
// the shared fuseserver lifecycle.
type Server struct {
	*fuseserver.Server
	root     *forwardfs.Root
	conn     *transport.Mount
	opts     Options
	logf     func(format string, args ...any)
	stopIdle chan struct{}
}

// Mount mounts the vault and returns once the kernel has the mount ready.
func Mount(opts Options) (*Server, error) {
	if opts.Session == nil {
		return nil, ErrNoSession
	}
	root, err := forwardfs.NewRoot(opts.Session, forwardfs.Options{
		SharedStorage:     opts.SharedStorage,
		ShowUndecryptable: opts.ShowUndecryptable,
		ForceOwner:        opts.ForceOwner.fuseOwner(),
		Logger:            opts.Logger,
		// Half the entry and attribute timeouts: a listing served from
		// the kernel's cache finds its entries' attributes still cached.
		ListingCache: cacheTimeout / 2,
		LookupHook:   opts.LookupHook,
	})
	if err != nil {
		return nil, fmt.Errorf("mount: %w", err)
	}
	timeout := cacheTimeout
	if opts.SharedStorage {
		timeout = 0
	}
	// Permission checks: with AllowOther other users reach the mount, and the
	// kernel must check every access against the modes (default_permissions).
	// Without it only the mounting user can reach the mount at all, and the
	// daemon acts on the backing files with that user's own rights, whose
	// modes are the plaintext modes; the kernel's check would add nothing but
	// a GETATTR of the parent before each create or unlink (40k extra
	// requests in an rm -rf of the kernel tree). gocryptfs makes the same
	// choice.
	var mo []string
	if opts.AllowOther {
		mo = append(mo, "default_permissions")
	}
	if opts.ReadOnly {
		mo = append(mo, "ro")
	}
	s := &Server{root: root, opts: opts, logf: logfTo(opts.Logger), stopIdle: make(chan struct{})}
	stopProfile := s.startCPUProfile()
	s.Server, s.conn, err = serve(root, serverConfig{
		mountPoint:   opts.MountPoint,
		fsName:       cmp.Or(opts.FsName, opts.Session.Dir()),
		typeName:     "encryptfs", // type "fuse.encryptfs"
		options:      append(mo, opts.ExtraOptions...),
		allowOther:   opts.AllowOther,
		debug:        opts.Debug,
		cacheTimeout: timeout,
		maxIO:        maxWrite,
		// The daemon clears suid/sgid on write itself, so the kernel
		// need not ask for security.capability before each write.
		capabilities: fuse.CAP_HANDLE_KILLPRIV_V2,
		transport:    opts.Transport,
		// Another writer of CIPHERDIR changes files behind the kernel's
		// back: only then must a changed mtime drop the cache.
		explicitInval: !opts.SharedStorage,
		logger:        opts.Logger,
	}, func() {
		stopProfile()
		root.Close()
		close(s.stopIdle)
	})
	if err != nil {
		return nil, fmt.Errorf("mount: %w", err)
	}
	if opts.Idle > 0 {
		go s.idleLoop(opts.Idle)
	}
	return s, nil
}

// Waiters is the number of the transport's threads that wait in the
// kernel for requests (transport.Mount.Waiters).
func (s *Server) Waiters() int { return s.conn.Waiters() }

// Transport says what serves the mount's requests: "io_uring" or
// "classic".
func (s *Server) Transport() string { return s.conn.Transport }

// DescribeTransport is the transport for a log line: "io_uring, 2 queues"
// or "classic /dev/fuse".
func (s *Server) DescribeTransport() string { return s.conn.Describe() }

// ReadsAside is the number of large READs the io_uring rings have had
// answered off their threads (0 on the classic transport).
func (s *Server) ReadsAside() uint64 { return s.conn.ReadsAside() }

// RingRequests is the number of requests each CPU queue's io_uring ring
// has answered; nil on the classic transport.
func (s *Server) RingRequests() []uint64 { return s.conn.RingRequests() }

// idleLoop unmounts after d without requests while no file is open.
func (s *Server) idleLoop(d time.Duration) {
	tick := max(d/10, 100*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	last, _ := s.root.Activity()
	since := time.Now()
	for {
		select {
		case <-s.stopIdle:
			return
		case <-t.C:
		}
		reqs, open := s.root.Activity()
		if reqs != last || open > 0 {
			last, since = reqs, time.Now()
			continue
		}
		if time.Since(since) >= d {
			if err := s.TryUnmount(); err != nil {
				s.logf("idle unmount of %s failed (will retry): %v", s.opts.MountPoint, err)
				since = time.Now()
				continue
			}
			s.logf("unmounted %s after %v idle", s.opts.MountPoint, d)
			return
		}
	}
}

// cpuProfileEnv and memProfileEnv name environment variables for
// profiling the daemon: ENCRYPTFS_CPUPROFILE=/path/cpu.pprof writes a Go
// CPU profile of the whole mount's lifetime to that file, and
// ENCRYPTFS_MEMPROFILE=/path/mem.pprof an allocation profile (every
// allocation sampled, so slower) at unmount. Read them with `go tool
// pprof`. They are developer tools, hence environment variables rather
// than CLI flags.
const (
	cpuProfileEnv = "ENCRYPTFS_CPUPROFILE"
	memProfileEnv = "ENCRYPTFS_MEMPROFILE"
)

// startCPUProfile starts the profiles asked for by cpuProfileEnv and
// memProfileEnv, if any, and returns the function that writes them out.
func (s *Server) startCPUProfile() (stop func()) {
	stopMem := s.startMemProfile()
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return stopMem
	}
	f, err := os.Create(path)
	if err != nil {
		s.logf("%s: %v", cpuProfileEnv, err)
		return stopMem
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		s.logf("%s: %v", cpuProfileEnv, err)
		f.Close()
		return stopMem
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			s.logf("%s: %v", cpuProfileEnv, err)
		}
		stopMem()
	}
}

// startMemProfile samples every allocation from now on if memProfileEnv
// is set, and returns the function that writes the allocation profile.
func (s *Server) startMemProfile() (stop func()) {
	path := os.Getenv(memProfileEnv)
	if path == "" {
		return func() {}
	}
	runtime.MemProfileRate = 1
	return func() {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			s.logf("%s: %v", memProfileEnv, err)
		}
	}
}
