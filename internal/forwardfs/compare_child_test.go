package forwardfs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The other user of TestPosixCompare: the test binary, re-executed with
// compareChildEnv set, drops to uid and gid otherUID with otherGID2 as a
// second group, makes the operations it reads from stdin and writes one
// errno per operation to stdout.

const (
	compareChildEnv = "ENCRYPTFS_FORWARDFS_COMPARE_CHILD"
	otherUID        = 65534 // nobody
	otherGID2       = 65533 // a second group of the other user, for chgrp
)

// userOp is one system call made as the other user.
type userOp struct {
	Op    string // create, mkdir, symlink, mkfifo, socket, chmod, chgrp, utimes, rename, link, unlink, rmdir
	Path  string
	Path2 string           `json:",omitempty"` // rename and link: the new name; symlink: the target
	Mode  uint32           `json:",omitempty"`
	Times [2]unix.Timespec `json:",omitempty"`
}

func init() {
	if os.Getenv(compareChildEnv) != "1" {
		return
	}
	os.Exit(compareChildMain())
}

func compareChildMain() int {
	var ops []userOp
	if err := json.NewDecoder(os.Stdin).Decode(&ops); err != nil {
		fmt.Fprintln(os.Stderr, "compare child: decode:", err)
		return 2
	}
	unix.Umask(0)
	// Since Go 1.16 these apply to every thread of the process.
	for _, err := range []error{
		syscall.Setgroups([]int{otherUID, otherGID2}),
		syscall.Setgid(otherUID),
		syscall.Setuid(otherUID),
	} {
		if err != nil {
			fmt.Fprintln(os.Stderr, "compare child: drop privileges:", err)
			return 2
		}
	}
	res := make([]int, len(ops))
	for i, op := range ops {
		var en unix.Errno
		if err := runUserOp(op); errors.As(err, &en) {
			res[i] = int(en)
		} else if err != nil {
			res[i] = -1
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

func runUserOp(op userOp) error {
	switch op.Op {
	case "create":
		fd, err := unix.Open(op.Path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, op.Mode)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "mkdir":
		return unix.Mkdir(op.Path, op.Mode)
	case "symlink":
		return unix.Symlink(op.Path2, op.Path)
	case "mkfifo":
		return unix.Mknod(op.Path, unix.S_IFIFO|op.Mode, 0)
	case "socket":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Bind(fd, &unix.SockaddrUnix{Name: op.Path})
	case "chmod":
		return unix.Fchmodat(unix.AT_FDCWD, op.Path, op.Mode, 0)
	case "chgrp":
		return unix.Fchownat(unix.AT_FDCWD, op.Path, -1, otherGID2, unix.AT_SYMLINK_NOFOLLOW)
	case "utimes":
		return unix.UtimesNanoAt(unix.AT_FDCWD, op.Path, op.Times[:], unix.AT_SYMLINK_NOFOLLOW)
	case "rename":
		return unix.Rename(op.Path, op.Path2)
	case "link":
		return unix.Linkat(unix.AT_FDCWD, op.Path, unix.AT_FDCWD, op.Path2, 0)
	case "unlink":
		return unix.Unlink(op.Path)
	case "rmdir":
		return unix.Rmdir(op.Path)
	}
	return fmt.Errorf("unknown op %q", op.Op)
}

// runAsOther makes ops as the other user and returns their errnos.
func runAsOther(t *testing.T, ops []userOp) []unix.Errno {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	in, err := json.Marshal(ops)
	must(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), compareChildEnv+"=1")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("other-user helper: %v\n%s", err, stderr.Bytes())
	}
	var res []int
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(ops) {
		t.Fatalf("other-user helper output %q: %v", out, err)
	}
	errs := make([]unix.Errno, len(res))
	for i, r := range res {
		errs[i] = unix.Errno(r)
	}
	return errs
}
