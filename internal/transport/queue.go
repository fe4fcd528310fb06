package transport

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/encryptfs/encryptfs/internal/uring"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

var le = binary.LittleEndian

// queue is one CPU's FUSE ring: the kernel puts there the requests of
// callers running on that CPU, and one OS thread, pinned to the CPU,
// answers each of them itself. Handing a request to another goroutine
// would bring back the cross-CPU wakeup this transport exists to avoid.
type queue struct {
	qid     int
	devFD   int
	ps      *fuse.ProtocolServer
	mem     []byte // every entry's header and payload buffers (mmap, outside the Go heap)
	ents    []entry
	scratch []byte // a request's payload, copied when the reply could overwrite it
	served  atomic.Uint64
	logf    func(string, ...any)

	// Large READs are answered on goroutines (offload): wake is an
	// eventfd the ring always has a read pending on; a goroutine that has
	// answered an entry adds it to answered and writes to wake, and the
	// ring's thread commits it.
	wake       int
	wakeBuf    []byte // the eventfd read's 8 bytes, in mem
	wakeArmed  bool   // a read of wake is pending (ring's thread only)
	answeredMu sync.Mutex
	answered   []uint64 // guarded by answeredMu, as is the write to wake
	aside      atomic.Uint64

	yield      *yielder // nil: waits never yield (yield.go)
	yieldState queueYield
}

// offloadMin is the smallest READ answered on a goroutine instead of the
// ring's thread. A sequential reader's readahead sends 1 MiB READs to its
// own CPU's queue, one after the other while it copies the pages of the
// previous one: answered inline, the backing read and decryption of the
// next READ wait for the thread, which shares the CPU with the reader
// (docs/performance.md, "Transports"). Small READs stay on the thread,
// where locality is what makes them cheap.
const offloadMin = 256 << 10

// wakeTag is the user data of the eventfd read; entry indexes are small.
const wakeTag = 1 << 63

// entry is one request slot: a header buffer (struct fuse_uring_req_header)
// and a payload buffer that the kernel reads and writes directly.
type entry struct {
	hdr, payload []byte
	iov          [2]unix.Iovec // REGISTER's argument; must stay put until submitted
}

func newQueue(qid, devFD, depth, payloadSize int, ps *fuse.ProtocolServer, logf func(string, ...any)) (*queue, error) {
	page := unix.Getpagesize()
	hdrSize := (reqHeaderSize + page - 1) / page * page
	payloadSize = (payloadSize + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, depth*(hdrSize+payloadSize)+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("queue %d: buffers: %w", qid, err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("queue %d: eventfd: %w", qid, err)
	}
	q := &queue{qid: qid, devFD: devFD, ps: ps, mem: mem, ents: make([]entry, depth), scratch: make([]byte, payloadSize), logf: logf,
		wake: wake, wakeBuf: mem[len(mem)-8:]}
	for i := range q.ents {
		e := &q.ents[i]
		off := i * (hdrSize + payloadSize)
		e.hdr = mem[off : off+reqHeaderSize : off+reqHeaderSize]
		e.payload = mem[off+hdrSize : off+hdrSize+payloadSize : off+hdrSize+payloadSize]
		e.iov[0] = unix.Iovec{Base: &e.hdr[0]}
		e.iov[0].SetLen(len(e.hdr))
		e.iov[1] = unix.Iovec{Base: &e.payload[0]}
		e.iov[1].SetLen(len(e.payload))
	}
	return q, nil
}

// run serves the queue on the calling goroutine's OS thread until the
// kernel ends the connection. It reports on started once the entries are
// registered (or failed to be). The thread stays locked: when run returns
// it ends with the goroutine instead of going back to the scheduler with
// its CPU affinity.
func (q *queue) run(started chan<- error) {
	runtime.LockOSThread()
	q.yieldState.tid.Store(int32(unix.Gettid()))
	defer func() {
		// A read still pending on wake could be completed into mem by
		// the ring's asynchronous teardown: leave mem mapped then (only
		// after a failed io_uring_enter; serve drains it otherwise).
		if !q.wakeArmed {
			unix.Munmap(q.mem)
		}
	}()
	defer unix.Close(q.wake)
	if err := pinThread(q.qid); err != nil {
		// An offline CPU still has a queue the kernel waits for; serve it
		// unpinned.
		q.logf("io_uring queue %d: not pinned to CPU %d: %v", q.qid, q.qid, err)
	}
	ring, err := uring.New(uint32(len(q.ents)) + 1) // + the eventfd read
	if err != nil {
		started <- fmt.Errorf("queue %d: %w", q.qid, err)
		return
	}
	defer ring.Close()
	for i := range q.ents {
		sqe := ring.NextSQE()
		sqe.SetURingCmd(q.devFD, cmdRegister, uintptr(unsafe.Pointer(&q.ents[i].iov[0])), 2, uint64(i))
		putCmdReq(sqe.Cmd(), 0, uint16(q.qid))
	}
	ring.NextSQE().SetRead(q.wake, q.wakeBuf, wakeTag)
	q.wakeArmed = true
	if err := ring.Submit(0); err != nil {
		started <- fmt.Errorf("queue %d: register: %w", q.qid, err)
		return
	}
	// A REGISTER that fails does so at once; one that works completes
	// only when a request arrives, which needs this thread to wait.
	var early []uring.CQE
	for c, ok := ring.PopCQE(); ok; c, ok = ring.PopCQE() {
		if c.Res < 0 {
			started <- fmt.Errorf("queue %d: register: %w", q.qid, unix.Errno(-c.Res))
			return
		}
		early = append(early, c)
	}
	runtime.KeepAlive(q.ents)
	started <- nil
	q.serve(ring, early)
}

// serve answers requests until every entry has been ended by the kernel.
func (q *queue) serve(ring *uring.Ring, early []uring.CQE) {
	live := len(q.ents)
	commit := func(i uint64) {
		sqe := ring.NextSQE() // never nil: at most one SQE per entry is outstanding
		sqe.SetURingCmd(q.devFD, cmdCommitAndFetch, 0, 0, i)
		putCmdReq(sqe.Cmd(), le.Uint64(q.ents[i].hdr[hdrCommitID:]), uint16(q.qid))
	}
	stopping := false
	handle := func(c uring.CQE) {
		if c.UserData == wakeTag {
			q.wakeArmed = false
			if c.Res < 0 {
				q.logf("io_uring queue %d: read of the wake-up eventfd: %v", q.qid, unix.Errno(-c.Res))
			}
			q.answeredMu.Lock()
			done := q.answered
			q.answered = nil
			q.answeredMu.Unlock()
			for _, i := range done {
				commit(i)
			}
			if !stopping {
				ring.NextSQE().SetRead(q.wake, q.wakeBuf, wakeTag)
				q.wakeArmed = true
			}
			return
		}
		if c.Res < 0 {
			// ENOTCONN: the connection was unmounted or aborted.
			live--
			if e := unix.Errno(-c.Res); e != unix.ENOTCONN && e != unix.ECANCELED {
				q.logf("io_uring queue %d: entry %d ended: %v", q.qid, c.UserData, e)
			}
			return
		}
		e := &q.ents[c.UserData]
		if offload(e) {
			q.aside.Add(1)
			go q.answerAside(e, c.UserData)
			return
		}
		q.answer(e)
		commit(c.UserData)
	}
	submit := func() error { return ring.Submit(1) }
	wait := func() bool {
		if err := q.wait(submit); err != nil {
			q.logf("io_uring queue %d: %v", q.qid, err)
			return false
		}
		for c, ok := ring.PopCQE(); ok; c, ok = ring.PopCQE() {
			handle(c)
		}
		return true
	}
	for _, c := range early {
		handle(c)
	}
	for live > 0 {
		if !wait() {
			return
		}
	}
	// Every entry has ended, so every goroutine aside has committed its
	// entry and, before that (under answeredMu), written to wake: one more
	// write completes the pending read now, and none is left for the
	// ring's teardown.
	stopping = true
	q.signal()
	for q.wakeArmed {
		if !wait() {
			return
		}
	}
}

// offload reports whether e is a READ of at least offloadMin bytes
// (fuse_read_in: fh u64, offset u64, size u32, ...).
func offload(e *entry) bool {
	return le.Uint32(e.hdr[4:]) == opRead && le.Uint32(e.hdr[hdrOpIn+16:]) >= offloadMin
}

// answerAside answers entry i on the calling goroutine and hands it back
// to the ring's thread to commit. A READ has no payload, so answer does
// not use the thread's scratch buffer.
func (q *queue) answerAside(e *entry, i uint64) {
	q.answer(e)
	q.answeredMu.Lock()
	defer q.answeredMu.Unlock()
	q.answered = append(q.answered, i)
	q.signal()
}

// signal wakes the ring's thread through its read of wake.
func (q *queue) signal() {
	var one [8]byte
	le.PutUint64(one[:], 1)
	if _, err := unix.Write(q.wake, one[:]); err != nil {
		q.logf("io_uring queue %d: wake: %v", q.qid, err)
	}
}

// answer decodes the request in e, has go-fuse's ProtocolServer call the
// file system, and leaves the reply in e: the fuse_out_header in the
// header's in_out area, the reply's body in the payload buffer, and its
// length in payload_sz.
func (q *queue) answer(e *entry) {
	h := e.hdr
	length := int(le.Uint32(h[0:]))
	opcode := le.Uint32(h[4:])
	unique := le.Uint64(h[8:])
	payloadSz := int(le.Uint32(h[hdrPayloadSz:]))
	// The kernel puts the op's fixed-size struct in op_in and the rest
	// (names, data) in the payload; the in-header's length covers both.
	opInSize := length - inHeaderSize - payloadSz
	n, st := 0, fuse.EIO
	if opInSize >= 0 && opInSize <= hdrOpInSize && payloadSz <= len(e.payload) {
		payload := e.payload[:payloadSz]
		if payloadSz > 0 && opcode != opWrite {
			// The reply is written into the same buffer; a handler that
			// still reads its input (a name) must not see it overwritten.
			// WRITE's data is not copied: its reply has no payload.
			payload = q.scratch[:copy(q.scratch, payload)]
		}
		in := [3][]byte{h[:inHeaderSize], h[hdrOpIn : hdrOpIn+opInSize], payload}
		out := [2][]byte{h[:outHeaderSize], e.payload}
		n, st = serveRequest(q.ps, in[:], out[:], q.logf)
	}
	switch {
	case !st.Ok():
		q.logf("io_uring queue %d: request %d (opcode %d, %d bytes): %v", q.qid, unique, opcode, length, st)
		putOutHeader(h, unique, -int32(unix.EIO))
		n = outHeaderSize
	case n == 0:
		// A request that wants no answer still has to be committed to
		// get the entry back.
		putOutHeader(h, unique, 0)
		n = outHeaderSize
	}
	le.PutUint32(h[hdrPayloadSz:], uint32(n-outHeaderSize))
	q.served.Add(1)
}

// putOutHeader writes a fuse_out_header {len u32; error s32; unique u64}.
func putOutHeader(h []byte, unique uint64, errno int32) {
	le.PutUint32(h[0:], outHeaderSize)
	le.PutUint32(h[4:], uint32(errno))
	le.PutUint64(h[8:], unique)
}
