// Package fuseserver runs a mounted go-fuse server: it waits until the kernel
// has the mount, serialises unmounts, waits for the end, and unmounts on
// SIGINT/SIGTERM. The forward mount (internal/mount) and the reverse view
// (internal/reversefs) share it; it imports nothing of EncryptFS.
package fuseserver

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Conn is a mounted FUSE server to run: a *fuse.Server, or a
// *transport.Mount, which serves over io_uring and unmounts itself.
type Conn interface {
	Serve()
	WaitMount() error
	Wait()
	Unmount() error
}

// Server is a running mount.
type Server struct {
	srv        Conn
	mountPoint string
	logf       func(format string, args ...any)
	umount     sync.Mutex // fuse.Server.Unmount is not safe for concurrent use
	once       sync.Once
	waited     chan struct{}
}

// Start serves srv and returns once the kernel has the mount. onExit runs
// once the server has stopped (after an unmount, or when Start fails), before
// Wait returns. logf receives diagnostics and may be nil.
func Start(srv Conn, mountPoint string, logf func(string, ...any), onExit func()) (*Server, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	s := &Server{srv: srv, mountPoint: mountPoint, logf: logf, waited: make(chan struct{})}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		onExit()
		return nil, err
	}
	go func() {
		srv.Wait()
		onExit()
		close(s.waited)
	}()
	return s, nil
}

// Wait blocks until the file system is unmounted (by Unmount, a signal, the
// owner's idle timer, or `fusermount3 -u` from outside).
func (s *Server) Wait() { <-s.waited }

// Done is closed once the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.waited }

// Unmount unmounts and waits for the server to stop. It fails (EBUSY) while
// the mount is in use.
func (s *Server) Unmount() error {
	if err := s.TryUnmount(); err != nil {
		select {
		case <-s.waited:
			return nil // already unmounted
		default:
		}
		return fmt.Errorf("unmount %s: %w", s.mountPoint, err)
	}
	s.Wait()
	return nil
}

// TryUnmount asks the kernel to unmount, one request at a time, without
// waiting for the server to stop; nil if it has already stopped.
func (s *Server) TryUnmount() error {
	s.umount.Lock()
	defer s.umount.Unlock()
	select {
	case <-s.waited:
		return nil
	default:
	}
	return s.srv.Unmount()
}

// UnmountOnSignal unmounts on SIGINT or SIGTERM (retrying on the next signal
// while the mount is busy). stop undoes it.
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
				s.logf("%v: unmounting %s", sig, s.mountPoint)
				if err := s.TryUnmount(); err != nil {
					s.logf("%v: unmount %s failed: %v", sig, s.mountPoint, err)
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
