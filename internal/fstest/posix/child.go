package posix

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// childEnv marks a re-executed test binary as a RunAsOtherUser helper.
const childEnv = "ENCRYPTFS_FSTEST_POSIX_CHILD"

// otherID is the uid and gid the helper drops to (nobody:nogroup).
const otherID = 65534

// childOp is one system call for the helper to make as the other user.
type childOp struct {
	Op    string // open, write, truncate, mkdir, rmdir, unlink, rename, chmod, chown, utimes, utimesnow, readdir, stat, symlink
	Path  string
	Path2 string `json:",omitempty"`
	Flags int    `json:",omitempty"`
	Mode  uint32 `json:",omitempty"`
	ID    int    `json:",omitempty"`
}

// The helper runs before the test binary's own main, so it works in any
// package's test binary that links this package, without a TestMain.
func init() {
	if os.Getenv(childEnv) != "1" {
		return
	}
	os.Exit(childMain())
}

// childMain drops to otherID, runs the ops read from stdin and writes one
// errno per op (0 for success) to stdout as JSON.
func childMain() int {
	var ops []childOp
	if err := json.NewDecoder(os.Stdin).Decode(&ops); err != nil {
		fmt.Fprintln(os.Stderr, "posix child: decode ops:", err)
		return 2
	}
	// Since Go 1.16 these apply to every thread of the process.
	if err := syscall.Setgroups([]int{otherID}); err != nil {
		fmt.Fprintln(os.Stderr, "posix child: setgroups:", err)
		return 2
	}
	if err := syscall.Setgid(otherID); err != nil {
		fmt.Fprintln(os.Stderr, "posix child: setgid:", err)
		return 2
	}
	if err := syscall.Setuid(otherID); err != nil {
		fmt.Fprintln(os.Stderr, "posix child: setuid:", err)
		return 2
	}
	results := make([]int, len(ops))
	for i, op := range ops {
		results[i] = errnoOf(runChildOp(op))
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, "posix child: encode:", err)
		return 2
	}
	return 0
}

// errnoOf turns an error into its errno number (-1 if it has none).
func errnoOf(err error) int {
	if err == nil {
		return 0
	}
	var en unix.Errno
	if errors.As(err, &en) {
		return int(en)
	}
	return -1
}

// runChildOp makes one system call.
func runChildOp(op childOp) error {
	switch op.Op {
	case "open":
		fd, err := unix.Open(op.Path, op.Flags|unix.O_CLOEXEC, op.Mode)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "write":
		fd, err := unix.Open(op.Path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte("written by the other user"))
		return err
	case "truncate":
		return unix.Truncate(op.Path, 0)
	case "mkdir":
		return unix.Mkdir(op.Path, op.Mode)
	case "rmdir":
		return unix.Rmdir(op.Path)
	case "unlink":
		return unix.Unlink(op.Path)
	case "rename":
		return unix.Rename(op.Path, op.Path2)
	case "link":
		return unix.Link(op.Path, op.Path2)
	case "symlink":
		return unix.Symlink(op.Path2, op.Path)
	case "chmod":
		return unix.Chmod(op.Path, op.Mode)
	case "chown":
		return unix.Chown(op.Path, op.ID, op.ID)
	case "utimes":
		ts := []unix.Timespec{{Sec: 1000}, {Sec: 1000}}
		return unix.UtimesNanoAt(unix.AT_FDCWD, op.Path, ts, 0)
	case "utimesnow":
		return unix.UtimesNanoAt(unix.AT_FDCWD, op.Path, nil, 0)
	case "readdir":
		f, err := os.Open(op.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Readdirnames(-1)
		return err
	case "stat":
		var st unix.Stat_t
		return unix.Stat(op.Path, &st)
	}
	return fmt.Errorf("unknown op %q", op.Op)
}
