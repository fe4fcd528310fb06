package transport

import (
	"runtime/debug"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// serveRequest has ps answer the request in in, its reply in out, as
// ps.HandleRequest does, but survives a panic of the file system.
//
// go-fuse recovers a panic of the node method itself (and calls
// MountOptions.PanicHandler), but not one of the fuse.ReadResult the
// method returned: its Bytes, Size and Done run after that recover, in
// ProtocolServer.HandleRequest, on this package's worker or ring thread,
// where a panic would end the whole daemon. serveRequest answers such a request
// with EIO (the callers write the EIO reply for a failed status) and logs
// the panic with its stack, once, like the PanicHandler of
// internal/mount; the mount goes on serving.
func serveRequest(ps *fuse.ProtocolServer, in, out [][]byte, logf func(string, ...any)) (n int, st fuse.Status) {
	defer func() {
		if r := recover(); r != nil {
			logf("panic in a FUSE request handler (answered EIO; the mount goes on): %v\n%s", r, debug.Stack())
			n, st = 0, fuse.EIO
		}
	}()
	return ps.HandleRequest(in, out)
}
