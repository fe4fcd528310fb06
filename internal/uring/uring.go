// Package uring is the small part of Linux io_uring that FUSE over io_uring
// needs: one ring with 128-byte submission entries (IORING_SETUP_SQE128,
// whose 80-byte command area carries FUSE's struct fuse_uring_cmd_req),
// IORING_OP_URING_CMD submissions, and waiting for completions.
//
// It is written over golang.org/x/sys/unix because no maintained Go io_uring
// package offers 128-byte entries and URING_CMD. A Ring is meant for one
// OS thread (IORING_SETUP_SINGLE_ISSUER): create it, submit to it and wait
// on it from a goroutine that has called runtime.LockOSThread.
package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Setup flags and opcodes from include/uapi/linux/io_uring.h.
const (
	setupSQE128       = 1 << 10 // IORING_SETUP_SQE128
	setupSingleIssuer = 1 << 12 // IORING_SETUP_SINGLE_ISSUER
	setupDeferTaskrun = 1 << 13 // IORING_SETUP_DEFER_TASKRUN
	featSingleMmap    = 1 << 0  // IORING_FEAT_SINGLE_MMAP
	enterGetEvents    = 1 << 0  // IORING_ENTER_GETEVENTS
	offSQRing         = 0
	offCQRing         = 0x8000000
	offSQEs           = 0x10000000
	sqeSize           = 128 // with IORING_SETUP_SQE128
	cqeSize           = 16
	opNop             = 0
	opRead            = 22 // IORING_OP_READ
	OpURingCmd        = 46 // IORING_OP_URING_CMD
	CmdAreaSize       = 80 // bytes of command data in a 128-byte SQE
	sqeCmdAreaOffset  = 48
	maxEntries        = 1 << 12
)

// ErrUnsupported is returned when the kernel has no io_uring, or has it
// disabled (sysctl kernel.io_uring_disabled).
var ErrUnsupported = errors.New("uring: io_uring not available")

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// SQE is one 128-byte submission queue entry (struct io_uring_sqe with
// IORING_SETUP_SQE128). Fields are set through its methods.
type SQE [sqeSize]byte

// CQE is one completion: the submission's UserData and its result (a
// negative errno on failure).
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// Ring is one io_uring instance.
type Ring struct {
	fd      int
	ringMem []byte // SQ and CQ rings (one mapping with IORING_FEAT_SINGLE_MMAP)
	cqMem   []byte // the CQ ring when it is mapped apart
	sqeMem  []byte

	sqHead, sqTail, sqMask *uint32
	sqArray                unsafe.Pointer
	sqEntries              uint32
	sqeTail                uint32 // our tail: SQEs filled, not yet published

	cqHead, cqTail, cqMask *uint32
	cqes                   unsafe.Pointer
}

// New sets up a ring with room for entries submissions (rounded up to a
// power of two by the kernel) and 128-byte SQEs, for use by the calling
// OS thread only.
func New(entries uint32) (*Ring, error) {
	if entries == 0 || entries > maxEntries {
		return nil, fmt.Errorf("uring: %d entries", entries)
	}
	p := params{flags: setupSQE128 | setupSingleIssuer | setupDeferTaskrun}
	fd, err := setup(entries, &p)
	if err == unix.EINVAL {
		// Kernels before 6.1 have no DEFER_TASKRUN; FUSE over io_uring
		// needs 6.14, so this only matters for the error message.
		p = params{flags: setupSQE128}
		fd, err = setup(entries, &p)
	}
	if err != nil {
		if err == unix.ENOSYS || err == unix.EPERM {
			return nil, fmt.Errorf("%w: io_uring_setup: %v", ErrUnsupported, err)
		}
		return nil, fmt.Errorf("uring: io_uring_setup: %w", err)
	}
	r := &Ring{fd: fd}
	if err := r.mmap(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func setup(entries uint32, p *params) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func (r *Ring) mmap(p *params) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*cqeSize)
	single := p.features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	r.ringMem, err = unix.Mmap(r.fd, offSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("uring: mmap SQ ring: %w", err)
	}
	cq := r.ringMem
	if !single {
		r.cqMem, err = unix.Mmap(r.fd, offCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return fmt.Errorf("uring: mmap CQ ring: %w", err)
		}
		cq = r.cqMem
	}
	r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("uring: mmap SQEs: %w", err)
	}
	at := func(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead, r.sqTail, r.sqMask = at(r.ringMem, p.sqOff.head), at(r.ringMem, p.sqOff.tail), at(r.ringMem, p.sqOff.ringMask)
	r.sqArray = unsafe.Pointer(&r.ringMem[p.sqOff.array])
	r.sqEntries = p.sqEntries
	r.cqHead, r.cqTail, r.cqMask = at(cq, p.cqOff.head), at(cq, p.cqOff.tail), at(cq, p.cqOff.ringMask)
	r.cqes = unsafe.Pointer(&cq[p.cqOff.cqes])
	// The SQ array maps ring slots to SQE indexes; keep it the identity.
	for i := range p.sqEntries {
		*(*uint32)(unsafe.Add(r.sqArray, 4*i)) = i
	}
	r.sqeTail = atomic.LoadUint32(r.sqTail)
	return nil
}

// Close unmaps the ring and closes its fd. The kernel cancels whatever
// was still pending on it.
func (r *Ring) Close() error {
	for _, m := range [][]byte{r.sqeMem, r.cqMem, r.ringMem} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	r.sqeMem, r.cqMem, r.ringMem = nil, nil, nil
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// NextSQE returns the next free submission entry, zeroed, or nil when the
// submission queue is full (submit first).
func (r *Ring) NextSQE() *SQE {
	head := atomic.LoadUint32(r.sqHead)
	if r.sqeTail-head >= r.sqEntries {
		return nil
	}
	idx := r.sqeTail & *r.sqMask
	r.sqeTail++
	sqe := (*SQE)(unsafe.Pointer(&r.sqeMem[int(idx)*sqeSize]))
	clear(sqe[:])
	return sqe
}

// Submit publishes the filled entries and enters the kernel, waiting for
// at least waitFor completions. EINTR is retried.
func (r *Ring) Submit(waitFor uint32) error {
	atomic.StoreUint32(r.sqTail, r.sqeTail)
	for {
		pending := r.sqeTail - atomic.LoadUint32(r.sqHead)
		var flags uintptr
		if waitFor > 0 {
			flags = enterGetEvents
		}
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(pending), uintptr(waitFor), flags, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			if waitFor > 0 && r.Ready() > 0 {
				return nil
			}
			continue
		default:
			return fmt.Errorf("uring: io_uring_enter: %w", errno)
		}
	}
}

// Ready reports how many completions wait to be read.
func (r *Ring) Ready() uint32 {
	return atomic.LoadUint32(r.cqTail) - atomic.LoadUint32(r.cqHead)
}

// PopCQE returns the oldest completion and frees its slot; ok is false
// when none is there.
func (r *Ring) PopCQE() (c CQE, ok bool) {
	head := atomic.LoadUint32(r.cqHead)
	if head == atomic.LoadUint32(r.cqTail) {
		return CQE{}, false
	}
	p := unsafe.Add(r.cqes, uintptr(head&*r.cqMask)*cqeSize)
	c = CQE{
		UserData: *(*uint64)(p),
		Res:      *(*int32)(unsafe.Add(p, 8)),
		Flags:    *(*uint32)(unsafe.Add(p, 12)),
	}
	atomic.StoreUint32(r.cqHead, head+1)
	return c, true
}

// SetURingCmd makes e an IORING_OP_URING_CMD on fd with the driver's
// command cmdOp. addr and length are the command's buffer (sqe->addr,
// sqe->len), as the driver defines them.
func (e *SQE) SetURingCmd(fd int, cmdOp uint32, addr uintptr, length uint32, userData uint64) {
	e[0] = OpURingCmd
	*(*int32)(unsafe.Pointer(&e[4])) = int32(fd)
	*(*uint32)(unsafe.Pointer(&e[8])) = cmdOp
	*(*uint64)(unsafe.Pointer(&e[16])) = uint64(addr)
	*(*uint32)(unsafe.Pointer(&e[24])) = length
	*(*uint64)(unsafe.Pointer(&e[32])) = userData
}

// SetNop makes e a no-op (IORING_OP_NOP) that completes with result 0.
func (e *SQE) SetNop(userData uint64) {
	e[0] = opNop
	*(*uint64)(unsafe.Pointer(&e[32])) = userData
}

// SetRead makes e an IORING_OP_READ of len(buf) bytes from fd at the
// fd's current position. buf must stay put until the read completes:
// memory outside the Go heap, or kept alive by the caller.
func (e *SQE) SetRead(fd int, buf []byte, userData uint64) {
	e[0] = opRead
	*(*int32)(unsafe.Pointer(&e[4])) = int32(fd)
	*(*int64)(unsafe.Pointer(&e[8])) = -1
	*(*uint64)(unsafe.Pointer(&e[16])) = uint64(uintptr(unsafe.Pointer(&buf[0])))
	*(*uint32)(unsafe.Pointer(&e[24])) = uint32(len(buf))
	*(*uint64)(unsafe.Pointer(&e[32])) = userData
}

// Cmd is the 80-byte command area of e, for the driver's own struct.
func (e *SQE) Cmd() []byte { return e[sqeCmdAreaOffset : sqeCmdAreaOffset+CmdAreaSize] }
