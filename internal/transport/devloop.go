package transport

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// devIocClone is FUSE_DEV_IOC_CLONE, _IOR(229, 0, uint32_t): it binds a
// freshly opened /dev/fuse fd to the connection of the fd passed in, as
// libfuse's clone_fd does. Every fd of a connection reads from the same
// input queue, but a reply must go back on the fd its request was read
// from (each fd has its own processing list).
const devIocClone = 0x8004e500

// devWorker is one OS thread serving the classic /dev/fuse transport on
// its own cloned fd: it reads a request into its preallocated buffer, has
// go-fuse's ProtocolServer answer it inline, and writes the reply, with no
// goroutine, request pool, lock or reader count between the kernel and
// the file system (go-fuse's own loop has all four per request; see
// docs/performance.md, "Transports", for the profile and the A/B).
type devWorker struct {
	id      int
	cpu     int // pinned to it, if pinned
	fd      int
	ps      *fuse.ProtocolServer
	in, out []byte
	served  atomic.Uint64
	logf    func(string, ...any)

	// The lazy hand-off (chainWorkers): only the first worker reads all
	// the time; each other one reads one request when woken, which the
	// worker before it does (a timer) when it has been busy on one
	// request for handOffAfter.
	wake  chan struct{} // this worker's wake-up, buffered
	stop  chan struct{} // closed when the first worker ends
	first bool          // reads all the time; closes stop at its end
	next  *devWorker    // woken by handOff; nil: none
	prev  *devWorker    // keeps this one reading while busy; nil: none
	busy  atomic.Bool   // answering a request
	timer *time.Timer   // fires handOff; armed while answering
}

// handOffAfter is how long a worker may be busy on one request before the
// next worker starts reading too. Most requests take 5-50 µs; a 1 MiB
// READ or WRITE, an fsync or a large directory takes longer.
const handOffAfter = 100 * time.Microsecond

// chainWorkers sets up the lazy hand-off between ws (docs/performance.md,
// "Transports"): every /dev/fuse reader waits on the connection's one
// input queue, and the kernel wakes the one that has waited longest, so
// with several readers a serial caller's requests alternate between them
// and each wakes a thread gone idle on its CPU; measured, one reader took
// half the daemon's CPU. So ws[0] reads all the time, and the others only
// while the workers before them are busy on slow requests.
func chainWorkers(ws []*devWorker) {
	stop := make(chan struct{})
	for i, w := range ws {
		w.wake, w.stop, w.first = make(chan struct{}, 1), stop, i == 0
		if i+1 < len(ws) {
			next := ws[i+1]
			w.next, next.prev = next, w
			w.timer = time.AfterFunc(time.Hour, func() {
				select {
				case next.wake <- struct{}{}:
				default:
				}
			})
			w.timer.Stop()
		}
	}
}

// cloneDev opens /dev/fuse and binds it to devFD's connection.
func cloneDev(devFD int) (int, error) {
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("clone /dev/fuse: %w", err)
	}
	src := uint32(devFD)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), devIocClone, uintptr(unsafe.Pointer(&src))); e != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("clone /dev/fuse (FUSE_DEV_IOC_CLONE): %w", e)
	}
	return fd, nil
}

// newDevWorker clones devFD for one worker. Its buffers take the largest
// request the kernel may send (a WRITE of max_write after its headers)
// and the largest reply (a READ of max_read, which the mount sets to
// MaxWrite, after its headers).
func newDevWorker(id, devFD int, o *fuse.MountOptions, ps *fuse.ProtocolServer, logf func(string, ...any)) (*devWorker, error) {
	fd, err := cloneDev(devFD)
	if err != nil {
		return nil, err
	}
	size := max(minReadBuffer, o.MaxWrite+unix.Getpagesize())
	return &devWorker{id: id, fd: fd, ps: ps, in: make([]byte, size), out: make([]byte, size), logf: logf}, nil
}

// run serves requests on the calling goroutine's OS thread until the
// connection ends (unmount, abort), then closes the worker's fd. The
// thread stays locked, as a ring thread does.
func (w *devWorker) run(pin bool) {
	runtime.LockOSThread()
	defer unix.Close(w.fd)
	if pin {
		if err := pinThread(w.cpu); err != nil {
			w.logf("/dev/fuse worker %d: not pinned to CPU %d: %v", w.id, w.cpu, err)
		}
	}
	if w.first {
		defer close(w.stop)
	}
	for {
		// A later worker waits to be woken, then reads for as long as
		// the one before it stays busy.
		if w.prev != nil && !w.prev.busy.Load() {
			select {
			case <-w.wake:
			case <-w.stop:
				return
			}
		}
		n, err := unix.Read(w.fd, w.in)
		switch {
		case err == nil:
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ENOENT):
			// The request was interrupted before it could be read.
			continue
		case errors.Is(err, unix.ENODEV):
			return // unmounted or aborted
		default:
			w.logf("/dev/fuse worker %d: read: %v", w.id, err)
			return
		}
		w.busy.Store(true)
		if w.timer != nil {
			w.timer.Reset(handOffAfter)
		}
		w.answer(n)
		if w.timer != nil {
			w.timer.Stop()
		}
		w.busy.Store(false)
	}
}

// answer handles the request in w.in[:n] and writes its reply, if any.
func (w *devWorker) answer(n int) {
	in := [1][]byte{w.in[:n]}
	out := [1][]byte{w.out}
	m, st := serveRequest(w.ps, in[:], out[:], w.logf)
	w.served.Add(1)
	if n < inHeaderSize {
		return
	}
	if !st.Ok() {
		unique := le.Uint64(w.in[8:])
		w.logf("/dev/fuse worker %d: request %d (opcode %d, %d bytes): %v", w.id, unique, le.Uint32(w.in[4:]), n, st)
		putOutHeader(w.out, unique, -int32(unix.EIO))
		m = outHeaderSize
	}
	if m == 0 {
		return // FORGET and the like want no answer
	}
	if _, err := unix.Write(w.fd, w.out[:m]); err != nil && !errors.Is(err, unix.ENOENT) {
		// ENOENT: the kernel no longer waits for this answer (an
		// interrupted request, a RELEASE racing unmount).
		w.logf("/dev/fuse worker %d: reply: %v", w.id, err)
	}
}

// pinThread sets the calling (locked) OS thread's affinity to cpu.
func pinThread(cpu int) error {
	var cpus unix.CPUSet
	cpus.Set(cpu)
	return unix.SchedSetaffinity(0, &cpus)
}
