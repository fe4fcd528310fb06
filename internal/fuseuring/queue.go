package fuseuring

import (
	"encoding/binary"
	"fmt"
	"runtime"
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
}

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
	mem, err := unix.Mmap(-1, 0, depth*(hdrSize+payloadSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("queue %d: buffers: %w", qid, err)
	}
	q := &queue{qid: qid, devFD: devFD, ps: ps, mem: mem, ents: make([]entry, depth), scratch: make([]byte, payloadSize), logf: logf}
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
	defer unix.Munmap(q.mem)
	if err := pinThread(q.qid); err != nil {
		// An offline CPU still has a queue the kernel waits for; serve it
		// unpinned.
		q.logf("io_uring queue %d: not pinned to CPU %d: %v", q.qid, q.qid, err)
	}
	ring, err := uring.New(uint32(len(q.ents)))
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
	handle := func(c uring.CQE) {
		if c.Res < 0 {
			// ENOTCONN: the connection was unmounted or aborted.
			live--
			if e := unix.Errno(-c.Res); e != unix.ENOTCONN && e != unix.ECANCELED {
				q.logf("io_uring queue %d: entry %d ended: %v", q.qid, c.UserData, e)
			}
			return
		}
		e := &q.ents[c.UserData]
		commitID := le.Uint64(e.hdr[hdrCommitID:])
		q.answer(e)
		sqe := ring.NextSQE() // never nil: at most one SQE per entry is outstanding
		sqe.SetURingCmd(q.devFD, cmdCommitAndFetch, 0, 0, c.UserData)
		putCmdReq(sqe.Cmd(), commitID, uint16(q.qid))
	}
	for _, c := range early {
		handle(c)
	}
	for live > 0 {
		if err := ring.Submit(1); err != nil {
			q.logf("io_uring queue %d: %v", q.qid, err)
			return
		}
		for c, ok := ring.PopCQE(); ok; c, ok = ring.PopCQE() {
			handle(c)
		}
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
		n, st = q.ps.HandleRequest(in[:], out[:])
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
