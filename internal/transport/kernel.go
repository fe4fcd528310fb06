package transport

import (
	"bytes"
	"fmt"
	"os"
)

// The FUSE-over-io_uring ABI, from include/uapi/linux/fuse.h (protocol 7.42)
// and fs/fuse/dev_uring.c.
const (
	// cmdRegister parks an entry's buffers in the kernel; it completes
	// when a request has been copied into them.
	cmdRegister = 1 // FUSE_IO_URING_CMD_REGISTER
	// cmdCommitAndFetch hands back the reply in the entry's buffers and
	// re-arms the entry in one step.
	cmdCommitAndFetch = 2 // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

	// struct fuse_uring_req_header: in_out[128], op_in[128], then
	// struct fuse_uring_ent_in_out {flags, commit_id u64; payload_sz,
	// padding u32; reserved u64}.
	hdrInOutSize  = 128
	hdrOpIn       = 128
	hdrOpInSize   = 128
	hdrEntInOut   = 256
	hdrCommitID   = hdrEntInOut + 8
	hdrPayloadSz  = hdrEntInOut + 16
	reqHeaderSize = 288

	inHeaderSize  = 40 // struct fuse_in_header
	outHeaderSize = 16 // struct fuse_out_header

	opRead  = 15 // FUSE_READ
	opWrite = 16 // FUSE_WRITE

	// minReadBuffer is FUSE_MIN_READ_BUFFER: the smallest payload buffer
	// the kernel accepts.
	minReadBuffer = 8192
)

// enableParam is the fuse module parameter that lets connections use
// io_uring (Linux 6.14+, CONFIG_FUSE_IO_URING). It is off by default.
const enableParam = "/sys/module/fuse/parameters/enable_uring"

// putCmdReq writes struct fuse_uring_cmd_req {flags u64; commit_id u64;
// qid u16; padding[6]} into an SQE's command area.
func putCmdReq(cmd []byte, commitID uint64, qid uint16) {
	le.PutUint64(cmd[0:], 0)
	le.PutUint64(cmd[8:], commitID)
	le.PutUint16(cmd[16:], qid)
}

// Available reports why this kernel cannot serve FUSE over io_uring, or
// nil when it can: the module parameter must exist and be on.
func Available() error {
	b, err := os.ReadFile(enableParam)
	if os.IsNotExist(err) {
		return fmt.Errorf("%w: %s does not exist (needs Linux 6.14+ with CONFIG_FUSE_IO_URING)", ErrUnavailable, enableParam)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if v := string(bytes.TrimSpace(b)); v != "Y" {
		return fmt.Errorf("%w: %s is %s (as root: echo Y > %s)", ErrUnavailable, enableParam, v, enableParam)
	}
	return nil
}

// Enable turns the module parameter on when it is off, which needs root;
// it returns why FUSE over io_uring stays unavailable, or nil. Tests and
// scripts use it; a mount never changes the machine's settings.
func Enable() error {
	if Available() == nil {
		return nil
	}
	if err := os.WriteFile(enableParam, []byte("Y"), 0); err != nil {
		return fmt.Errorf("%w: cannot turn on %s: %v", ErrUnavailable, enableParam, err)
	}
	return Available()
}
