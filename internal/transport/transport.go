// Package transport serves a go-fuse file system over FUSE-over-io_uring
// (Linux 6.14+): one ring per CPU queue, each served by one OS thread that
// is locked and pinned to its CPU and answers every request itself, so a
// request never crosses CPUs (docs/performance.md, "Transports").
//
// It builds only on go-fuse's public API: fuse.NewServer keeps serving
// INIT, interrupts, FORGETs and notifications over /dev/fuse (the kernel
// sends those there even with rings), MountOptions.ExtraCapabilities asks
// for CAP_OVER_IO_URING in INIT, and fuse.ProtocolServer decodes the ring
// requests and calls the same RawFileSystem. To hold the connection's
// /dev/fuse fd, which the rings are registered on, this package mounts
// itself and hands go-fuse the fd as a "/dev/fd/N" mount point.
package transport

import (
	"errors"
	"fmt"
	"github.com/encryptfs/encryptfs/internal/fault"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/encryptfs/encryptfs/internal/uring"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Mode chooses the transport.
type Mode string

// The modes.
const (
	Auto    Mode = "auto"    // io_uring when the kernel offers it, else classic
	URing   Mode = "uring"   // io_uring or fail
	Classic Mode = "classic" // read/writev on /dev/fuse
)

// ParseMode parses "auto", "uring" or "classic"; "" is Auto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return Auto, nil
	case Auto, URing, Classic:
		return m, nil
	}
	return "", fmt.Errorf("transport %q: want auto, uring or classic", s)
}

// ErrUnavailable is returned (wrapped, with the reason) when io_uring was
// asked for and the kernel cannot give it.
var ErrUnavailable = fault.New(fault.NotSupported, "FUSE over io_uring unavailable")

// queueDepth is the number of entries per queue. One thread answers one
// request at a time, so more entries only let the kernel hand over the
// next requests while one is answered, and then commit them in one
// io_uring_enter; each costs a payload buffer of max_write (1 MiB).
const queueDepth = 2

// Options are the transport's own options.
type Options struct {
	Mode Mode
	Logf func(format string, args ...any) // the line saying why Auto fell back to classic, and problems; may be nil

	failQueues error // tests: the rings fail to start after INIT agreed on io_uring

	// Test hooks for the variants the classic transport measured slower
	// than its pinned worker threads that all read (docs/performance.md,
	// "Transports"): out of the product path, kept for their tests. To
	// A/B them against the default, build commit 4cf69d2, where
	// ENCRYPTFS_CLASSIC_LOOP chose them (bench/README.md).
	//
	// goFuseLoop serves /dev/fuse with go-fuse's own loop instead of this
	// package's worker threads: all of the classic transport, and what
	// io_uring leaves on /dev/fuse (devloop.go).
	goFuseLoop bool
	// lazyHandOff has only the first classic worker read all the time and
	// wakes the next one only when it is stuck on a request
	// (chainWorkers): on a quiet machine every worker reading untarred
	// Go's src/ in 0.47x the time.
	lazyHandOff bool
}

// Mount is a mounted go-fuse server and the transport that serves it.
type Mount struct {
	// Server is go-fuse's server: Serve it, and Wait for it, as usual,
	// but unmount with Mount.Unmount.
	Server *fuse.Server
	// Transport says what serves requests: "io_uring" or "classic". The
	// mount's owner logs it (only a fallback is logged here).
	Transport string
	// Why says why a mount in Auto mode is classic ("" otherwise).
	Why string

	dev     *devMount // nil when go-fuse mounted (classic)
	devFD   int       // our own dup of the /dev/fuse fd, for the rings and the clones
	queues  []*queue
	yield   *yielder     // the queues' watchdog (yield.go); nil: none
	workers []*devWorker // the classic transport's threads; nil: go-fuse's loop serves
	done    sync.WaitGroup
}

// New mounts raw on mountPoint with go-fuse's options o and sets up the
// transport opts.Mode asks for. In Auto mode a kernel without io_uring
// gives a classic mount and one log line that says why.
func New(raw fuse.RawFileSystem, mountPoint string, o fuse.MountOptions, opts Options) (*Mount, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	mode := opts.Mode
	if mode == "" {
		mode = Auto
	}
	classic := func(why string) (*Mount, error) {
		var m *Mount
		var err error
		if opts.goFuseLoop {
			m, err = newClassic(raw, mountPoint, o, why)
		} else {
			m, err = newDevThreads(raw, mountPoint, o, logf, why, opts.lazyHandOff)
		}
		if err == nil && why != "" {
			logf("transport: classic /dev/fuse (io_uring unavailable: %s)", why)
		}
		return m, err
	}
	if mode == Classic {
		return classic("")
	}
	if err := Available(); err != nil {
		if mode == URing {
			return nil, err
		}
		return classic(err.Error())
	}
	if err := probeURing(); err != nil {
		if mode == URing {
			return nil, err
		}
		return classic(err.Error())
	}
	m, err := newURing(raw, mountPoint, o, logf, opts)
	if err != nil {
		return nil, err
	}
	if m.Transport == "classic" {
		if mode == URing {
			go m.Serve()
			if err := m.Unmount(); err != nil {
				logf("unmount %s: %v", mountPoint, err)
			}
			m.Wait()
			m.Close()
			return nil, fmt.Errorf("%w: %s", ErrUnavailable, m.Why)
		}
		logf("transport: classic /dev/fuse (io_uring unavailable: %s)", m.Why)
		return m, nil
	}
	return m, nil
}

// newClassic is the classic transport served by go-fuse's own loop (the
// test hook Options.goFuseLoop).
func newClassic(raw fuse.RawFileSystem, mountPoint string, o fuse.MountOptions, why string) (*Mount, error) {
	srv, err := fuse.NewServer(raw, mountPoint, &o)
	if err != nil {
		return nil, err
	}
	return &Mount{Server: srv, Transport: "classic", Why: why, devFD: -1}, nil
}

// newDevThreads is the classic transport served by one worker thread per
// CPU, pinned there, each on its own clone of the connection's /dev/fuse
// fd (devloop.go); lazy chains them (the test hook Options.lazyHandOff).
// go-fuse's server answers INIT (in fuse.NewServer) and sends
// notifications; its reader runs only once the workers have ended, to
// see the connection gone and tear down.
func newDevThreads(raw fuse.RawFileSystem, mountPoint string, o fuse.MountOptions, logf func(string, ...any), why string, lazy bool) (*Mount, error) {
	m, err := mountServer(raw, mountPoint, &o)
	if err != nil {
		return nil, err
	}
	m.Why = why
	ps := fuse.NewProtocolServer(raw, &o)
	err = replayInit(ps, m.Server.KernelSettings())
	for id, cpu := range allowedCPUs() {
		if err != nil {
			break
		}
		var w *devWorker
		if w, err = newDevWorker(id, m.devFD, &o, ps, logf); err == nil {
			w.cpu = cpu
			m.workers = append(m.workers, w)
		}
	}
	if err != nil {
		// Nobody reads the clones yet: take the mount away, and let
		// go-fuse's reader see it go.
		for _, w := range m.workers {
			unix.Close(w.fd)
		}
		m.workers = nil
		go m.Server.Serve()
		m.dev.unmount()
		m.Server.Wait()
		m.Close()
		return nil, err
	}
	if lazy {
		chainWorkers(m.workers)
	}
	for _, w := range m.workers {
		m.done.Add(1)
		go func() {
			defer m.done.Done()
			w.run(true)
		}()
	}
	return m, nil
}

// mountServer mounts with our own /dev/fuse fd (kept as m.devFD, for the
// rings or the clones) and has go-fuse's server answer INIT on it.
func mountServer(raw fuse.RawFileSystem, mountPoint string, o *fuse.MountOptions) (*Mount, error) {
	dev, err := mountDev(mountPoint, o)
	if err != nil {
		return nil, err
	}
	devFD, err := unix.FcntlInt(uintptr(dev.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		unix.Close(dev.fd)
		dev.unmount()
		return nil, fmt.Errorf("dup /dev/fuse: %w", err)
	}
	// go-fuse now owns dev.fd; it must not try to mount or unmount.
	o.DirectMount, o.DirectMountStrict = false, false
	srv, err := fuse.NewServer(raw, "/dev/fd/"+strconv.Itoa(dev.fd), o)
	if err != nil {
		unix.Close(devFD)
		dev.unmount()
		return nil, err
	}
	return &Mount{Server: srv, Transport: "classic", dev: dev, devFD: devFD}, nil
}

// newURing mounts with our own /dev/fuse fd, has go-fuse answer INIT with
// CAP_OVER_IO_URING, and registers the rings. If the kernel's INIT did not
// offer io_uring, or the rings cannot be set up, the mount stays and is
// served classically (Transport "classic", Why says why).
func newURing(raw fuse.RawFileSystem, mountPoint string, o fuse.MountOptions, logf func(string, ...any), opts Options) (*Mount, error) {
	o.ExtraCapabilities |= fuse.CAP_OVER_IO_URING
	m, err := mountServer(raw, mountPoint, &o)
	if err != nil {
		return nil, err
	}
	srv, dev, devFD := m.Server, m.dev, m.devFD
	init := srv.KernelSettings()
	if init.Flags64()&fuse.CAP_OVER_IO_URING == 0 {
		m.Why = "the kernel's INIT does not offer FUSE_OVER_IO_URING"
		return m, nil
	}
	// From here on the kernel holds every request back until each CPU
	// queue has a ring entry, or until a REGISTER fails.
	ps := fuse.NewProtocolServer(raw, &o)
	err = replayInit(ps, init)
	if err == nil && opts.failQueues != nil {
		err = opts.failQueues
	}
	if err == nil {
		err = m.startQueues(ps, &o, logf)
	}
	if err != nil {
		m.Why = err.Error()
		if derr := refuseURing(devFD); derr != nil {
			// Nothing can reach the mount: take it away.
			go srv.Serve()
			dev.unmount()
			srv.Wait()
			m.Close()
			return nil, fmt.Errorf("%w: %v; and the kernel could not be turned back to /dev/fuse: %v", ErrUnavailable, err, derr)
		}
		return m, nil
	}
	m.Transport = "io_uring"
	if opts.goFuseLoop {
		return m, nil // go-fuse's reader serves /dev/fuse alongside
	}
	// What still comes on /dev/fuse (FORGETs: one per removed file in an
	// rm -rf; interrupts, which the shared ProtocolServer can now match to
	// the ring requests it is answering) is read by one worker thread,
	// unpinned, like the classic transport's.
	w, err := newDevWorker(len(m.queues), devFD, &o, ps, logf)
	if err != nil {
		logf("/dev/fuse worker: %v; go-fuse's reader serves /dev/fuse", err)
		return m, nil
	}
	m.workers = []*devWorker{w}
	m.done.Add(1)
	go func() {
		defer m.done.Done()
		w.run(false)
	}()
	return m, nil
}

// refuseURing turns the connection back to /dev/fuse after INIT agreed on
// io_uring: the kernel drops io_uring for a connection whose REGISTER
// fails (fs/fuse/dev_uring.c), so it is sent one that must (queue 0xffff
// does not exist).
func refuseURing(devFD int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ring, err := uring.New(1)
	if err != nil {
		return err
	}
	defer ring.Close()
	sqe := ring.NextSQE()
	sqe.SetURingCmd(devFD, cmdRegister, 0, 0, 0)
	putCmdReq(sqe.Cmd(), 0, 0xffff)
	if err := ring.Submit(1); err != nil {
		return err
	}
	c, ok := ring.PopCQE()
	if !ok || c.Res >= 0 {
		return fmt.Errorf("the REGISTER meant to fail gave %+v", c)
	}
	return nil
}

// replayInit hands ps the INIT the kernel sent, so that it parses requests
// by the same negotiated protocol version and flags as the classic server.
// go-fuse's InitIn holds the whole request, header included.
func replayInit(ps *fuse.ProtocolServer, init *fuse.InitIn) error {
	in := unsafe.Slice((*byte)(unsafe.Pointer(init)), unsafe.Sizeof(*init))
	out := make([]byte, 4096)
	n, st := ps.HandleRequest([][]byte{in}, [][]byte{out})
	if !st.Ok() || n < outHeaderSize || le.Uint32(out[4:]) != 0 {
		return fmt.Errorf("go-fuse's ProtocolServer refused INIT (status %v, %d bytes, error %d)", st, n, int32(le.Uint32(out[4:])))
	}
	return nil
}

// startQueues starts one queue per possible CPU (the kernel has one per
// possible CPU and uses the rings only once each has an entry) and waits
// until each has registered its entries.
func (m *Mount) startQueues(ps *fuse.ProtocolServer, o *fuse.MountOptions, logf func(string, ...any)) error {
	n, err := possibleCPUs()
	if err != nil {
		return err
	}
	// The kernel's payload size: max(FUSE_MIN_READ_BUFFER, max_write,
	// max_pages pages); go-fuse asks for max_pages = MaxWrite rounded up
	// to pages.
	payload := max(minReadBuffer, o.MaxWrite, (o.MaxWrite+os.Getpagesize()-1)/os.Getpagesize()*os.Getpagesize())
	started := make(chan error, n)
	y := newYielder() // nil when waits may not yield
	for qid := range n {
		q, err := newQueue(qid, m.devFD, queueDepth, payload, ps, logf)
		if err != nil {
			return err // queues already started end at unmount
		}
		q.yield = y
		m.queues = append(m.queues, q)
		m.done.Add(1)
		go func() {
			defer m.done.Done()
			q.run(started)
		}()
	}
	var errs []error
	for range n {
		errs = append(errs, <-started)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if y != nil {
		y.start(m.queues)
		m.yield = y
	}
	return nil
}

// allowedCPUs lists the CPUs this process may run on (one classic worker
// thread each), or just CPU 0 if that cannot be read.
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return []int{0}
	}
	var cpus []int
	for cpu := 0; len(cpus) < set.Count(); cpu++ {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

// probeURing checks that this process may create io_uring instances
// (sysctl kernel.io_uring_disabled, seccomp) before INIT commits the
// connection to rings.
func probeURing() error {
	r, err := uring.New(1)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return r.Close()
}

// possibleCPUs is the number of possible CPUs (num_possible_cpus), from
// /sys/devices/system/cpu/possible ("0-3", "0", "0-1,4-5").
func possibleCPUs() (int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, err
	}
	return parseCPUList(b)
}

// parseCPUList returns one more than the highest CPU in a kernel CPU list.
func parseCPUList(b []byte) (int, error) {
	highest := -1
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		_, hi, _ := strings.Cut(r, "-")
		if hi == "" {
			hi = r
		}
		v, err := strconv.Atoi(hi)
		if err != nil {
			return 0, fmt.Errorf("possible CPUs %q: %w", b, err)
		}
		highest = max(highest, v)
	}
	if highest < 0 {
		return 0, fmt.Errorf("possible CPUs %q", b)
	}
	return highest + 1, nil
}

// Unmount asks the kernel to unmount; it fails (EBUSY) while the mount is
// in use. Serve returns once the kernel has let go.
func (m *Mount) Unmount() error {
	if m.dev == nil {
		return m.Server.Unmount()
	}
	return m.dev.unmount()
}

// Close waits for the ring threads to end (the kernel ends them when the
// connection goes, by unmount or abort) and releases the transport's fd.
// Call it after the server has stopped.
func (m *Mount) Close() {
	m.done.Wait()
	if m.yield != nil {
		m.yield.close() // m.yield stays: Describe may read it meanwhile
	}
	if m.devFD >= 0 {
		unix.Close(m.devFD)
		m.devFD = -1
	}
}

// Serve serves until the file system is unmounted. The rings and the
// /dev/fuse worker threads serve themselves: Serve waits for them to end,
// and go-fuse's reader then only sees the connection gone and tears down
// (closes its fd, tells the file system it is unmounted). Without
// workers, go-fuse's reader serves /dev/fuse.
func (m *Mount) Serve() {
	if m.workers != nil {
		m.done.Wait()
	}
	m.Server.Serve()
}

// Wait waits for Serve to end.
func (m *Mount) Wait() { m.Server.Wait() }

// WaitMount waits until the mount is usable, as go-fuse's WaitMount.
func (m *Mount) WaitMount() error {
	if err := m.Server.WaitMount(); err != nil {
		return err
	}
	if m.dev != nil {
		pollHack(m.dev.mountPoint)
	}
	return nil
}

// Describe says which transport serves, for the mount's log line:
// "io_uring, 2 queues, yielding waits" (yield.go; without CAP_SYS_NICE
// "io_uring, 2 queues") or "classic /dev/fuse".
func (m *Mount) Describe() string {
	if m.Transport == "io_uring" {
		if m.yield != nil {
			return fmt.Sprintf("io_uring, %d queues, yielding waits", len(m.queues))
		}
		return fmt.Sprintf("io_uring, %d queues", len(m.queues))
	}
	return "classic /dev/fuse"
}

// Waiters is the number of threads that serve requests by waiting for
// them in the kernel: the classic workers, or the rings' threads and the
// worker that reads what io_uring leaves on /dev/fuse (0 with go-fuse's
// own loop, a test hook). Each such wait is a system call that holds one
// of the Go runtime's Ps; with no P idle, the runtime's monitor takes it
// back from the waiting thread within about 20 us and hands it on, and
// the thread must win one back, through the scheduler, when its request
// arrives. On the classic transport the daemon gives the runtime a P per
// waiter on top of its own (cli: giveWaitersProcs), so that those waits
// cost no hand-offs.
func (m *Mount) Waiters() int { return len(m.queues) + len(m.workers) }

// ReadsAside is the number of large READs the rings have had answered on
// other goroutines (offloadMin), over all queues.
func (m *Mount) ReadsAside() uint64 {
	var n uint64
	for _, q := range m.queues {
		n += q.aside.Load()
	}
	return n
}

// RingRequests is the number of requests each queue's ring has answered
// (nil for a classic mount). Requests the classic /dev/fuse reader answers
// are not counted.
func (m *Mount) RingRequests() []uint64 {
	var out []uint64
	for _, q := range m.queues {
		out = append(out, q.served.Load())
	}
	return out
}
