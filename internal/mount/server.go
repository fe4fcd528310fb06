package mount

import (
	"log"
	"os"
	"runtime/debug"
	"time"

	"github.com/encryptfs/encryptfs/internal/fuseserver"
	"github.com/encryptfs/encryptfs/internal/transport"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// serverConfig is what the forward and the reverse mount choose for their
// go-fuse server; serve builds it the same way for both.
type serverConfig struct {
	mountPoint   string
	fsName       string         // the source shown in /proc/mounts
	typeName     string         // the type shown in /proc/mounts is "fuse." + typeName
	options      []string       // -o options for the kernel
	allowOther   bool           // other users may access the mount
	debug        bool           // log every FUSE request and reply
	cacheTimeout time.Duration  // of the kernel's entry, attribute and negative-lookup caches
	maxIO        int            // largest WRITE request; go-fuse also sets max_read to it
	capabilities uint64         // FUSE capabilities asked for beyond go-fuse's own
	rootAttr     *fs.StableAttr // the root's inode; nil: go-fuse's default
	transport    transport.Mode // auto (""), uring or classic
	// explicitInval turns off the kernel's invalidation of a file's page
	// cache when a GETATTR shows another mtime (auto_inval_data). For a
	// mount that is the only writer of its files: every change went
	// through the page cache already, and the invalidation races with a
	// write of another process (forwardfs.Root.keepCache).
	explicitInval bool
	logger        *log.Logger // diagnostics; nil discards them
}

// serve mounts root with c and serves it over the transport c asks for
// (internal/transport: io_uring rings, or the classic /dev/fuse loop); it
// returns once the kernel has the mount ready. onExit runs once, when the
// server has stopped or could not start (root is then closed there).
func serve(root fs.InodeEmbedder, c serverConfig, onExit func()) (*fuseserver.Server, *transport.Mount, error) {
	timeout := c.cacheTimeout
	fopts := &fs.Options{
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		Logger:          c.logger,
		NullPermissions: true, // mode 0 stays 0
		RootStableAttr:  c.rootAttr,
		MountOptions: fuse.MountOptions{
			AllowOther:               c.allowOther,
			Options:                  c.options,
			FsName:                   c.fsName,
			Name:                     c.typeName,
			MaxWrite:                 c.maxIO,
			Debug:                    c.debug,
			Logger:                   c.logger,
			ExtraCapabilities:        c.capabilities,
			ExplicitDataCacheControl: c.explicitInval,
			DirectMount:              true, // fall back to fusermount3 if this fails
			// Every READ answer is plaintext already in memory: splicing it
			// through a pipe to /dev/fuse only adds a copy and three
			// syscalls, and a 1 MiB READ (the readahead above) does not
			// fit the 1 MiB pipe with its header, so go-fuse logged
			// "trySplice: ... max pipe size" and fell back on every one.
			DisableSplice: true,
			PanicHandler:  panicHandler(c.logger),
		},
	}
	logf := logfTo(c.logger)
	conn, err := transport.New(fs.NewNodeFS(root, fopts), c.mountPoint, fopts.MountOptions,
		transport.Options{Mode: c.transport, Logf: logf})
	if err != nil {
		onExit()
		return nil, nil, err
	}
	srv, err := fuseserver.Start(conn, c.mountPoint, logf, func() {
		conn.Close()
		onExit()
	})
	if err != nil {
		return nil, nil, err
	}
	// A sequential read should come as READs as large as a WRITE may be,
	// two at a time (raiseReadahead); a mount by a non-root user keeps
	// 128 KiB.
	if err := raiseReadahead(c.mountPoint, readaheadREADs*c.maxIO>>10); err != nil && os.Geteuid() == 0 {
		logf("readahead of %s stays at the kernel's default: %v", c.mountPoint, err)
	}
	return srv, conn, nil
}

// panicHandler is the mount's fuse.MountOptions.PanicHandler: go-fuse
// recovers a panic in a node method and answers that request with the
// status returned here, EIO; the mount goes on serving. The panic and its
// stack are logged once, to l (the mount's log: syslog for a daemon), or
// to the standard logger when l is nil: a panic is a bug, never
// discarded. (A panic in what go-fuse runs after its recover, a
// ReadResult's methods, is transport's: serveRequest there.)
func panicHandler(l *log.Logger) func(any) fuse.Status {
	if l == nil {
		l = log.Default()
	}
	return func(r any) fuse.Status {
		l.Printf("panic in a FUSE request handler (answered EIO; the mount goes on): %v\n%s", r, debug.Stack())
		return fuse.EIO
	}
}

// logfTo returns a Printf to l that discards everything when l is nil.
func logfTo(l *log.Logger) func(format string, args ...any) {
	return func(format string, args ...any) {
		if l != nil {
			l.Printf(format, args...)
		}
	}
}
