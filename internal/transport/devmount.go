package transport

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// devMount is a FUSE mount made here rather than by go-fuse, so that this
// package holds the /dev/fuse fd the rings must be registered on: go-fuse's
// Server does not expose its fd, and takes an already mounted one through
// its "/dev/fd/N" mount point. It mounts as go-fuse does: mount(2) when
// allowed (root), else the fusermount3 helper, which passes the fd back
// over a socket.
type devMount struct {
	fd         int  // /dev/fuse, handed to go-fuse
	direct     bool // mounted with mount(2), not fusermount3
	mountPoint string
}

// mountDev mounts a FUSE file system on mountPoint with go-fuse's options o
// and returns the connection's /dev/fuse fd.
func mountDev(mountPoint string, o *fuse.MountOptions) (*devMount, error) {
	fd, err := mountDirect(mountPoint, o)
	if err == nil {
		return &devMount{fd: fd, direct: true, mountPoint: mountPoint}, nil
	}
	fd, ferr := mountFusermount(mountPoint, o)
	if ferr != nil {
		return nil, fmt.Errorf("mount %s: %v; fusermount3: %w", mountPoint, err, ferr)
	}
	return &devMount{fd: fd, mountPoint: mountPoint}, nil
}

// kernelOptions are the -o options the kernel (or fusermount3) gets.
func kernelOptions(o *fuse.MountOptions) []string {
	opts := append([]string(nil), o.Options...)
	if o.AllowOther {
		opts = append(opts, "allow_other")
	}
	return append(opts, fmt.Sprintf("max_read=%d", o.MaxWrite))
}

func mountDirect(mountPoint string, o *fuse.MountOptions) (int, error) {
	var st unix.Stat_t
	if err := unix.Stat(mountPoint, &st); err != nil {
		return -1, err
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	data := []string{
		fmt.Sprintf("fd=%d", fd),
		fmt.Sprintf("rootmode=%o", st.Mode&unix.S_IFMT),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
	}
	// [no]suid, [no]dev, [no]exec and ro are mount flags, not data.
	for _, opt := range kernelOptions(o) {
		switch opt {
		case "nosuid":
			flags |= unix.MS_NOSUID
		case "suid":
			flags &^= unix.MS_NOSUID
		case "nodev":
			flags |= unix.MS_NODEV
		case "dev":
			flags &^= unix.MS_NODEV
		case "noexec":
			flags |= unix.MS_NOEXEC
		case "exec":
			flags &^= unix.MS_NOEXEC
		case "ro":
			flags |= unix.MS_RDONLY
		default:
			data = append(data, opt)
		}
	}
	source := o.FsName
	if source == "" {
		source = o.Name
	}
	if err := unix.Mount(source, mountPoint, "fuse."+o.Name, flags, strings.Join(data, ",")); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func mountFusermount(mountPoint string, o *fuse.MountOptions) (int, error) {
	bin, err := exec.LookPath("fusermount3")
	if err != nil {
		return -1, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	local, remote := os.NewFile(uintptr(pair[0]), "fusermount-local"), os.NewFile(uintptr(pair[1]), "fusermount-remote")
	defer local.Close()
	defer remote.Close()
	opts := kernelOptions(o)
	if o.FsName != "" {
		opts = append(opts, "fsname="+o.FsName)
	}
	if o.Name != "" {
		opts = append(opts, "subtype="+o.Name)
	}
	for i, s := range opts {
		opts[i] = strings.NewReplacer(`\`, `\\`, `,`, `\,`).Replace(s)
	}
	cmd := exec.Command(bin, "-o", strings.Join(opts, ","), "--", mountPoint)
	cmd.Env = []string{"_FUSE_COMMFD=3"}
	cmd.ExtraFiles = []*os.File{remote}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return -1, fmt.Errorf("%v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(local.Fd()), buf, oob, 0)
	if err != nil {
		return -1, fmt.Errorf("receive the /dev/fuse fd: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("receive the /dev/fuse fd: %d messages, %v", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, fmt.Errorf("receive the /dev/fuse fd: %v", err)
	}
	unix.CloseOnExec(fds[0])
	return fds[0], nil
}

// unmount unmounts, retrying a few times as go-fuse does: right after the
// last close the kernel may still count a file as open (EBUSY).
func (d *devMount) unmount() error {
	var err error
	delay := time.Duration(0)
	for range 5 {
		if err = d.unmountOnce(); err == nil {
			return nil
		}
		delay = 2*delay + 5*time.Millisecond
		time.Sleep(delay)
	}
	return err
}

func (d *devMount) unmountOnce() error {
	if d.direct {
		if err := unix.Unmount(d.mountPoint, 0); err != syscall.EPERM {
			return err
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command("fusermount3", "-u", "--", d.mountPoint)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("fusermount3 -u: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// pollHack does what go-fuse's WaitMount does for mounts it makes itself
// (and skips for a /dev/fd/N mount point): it makes the kernel send one
// POLL, which go-fuse answers with ENOSYS so that the kernel never polls
// again (a POLL could otherwise need a thread the Go runtime's poller holds).
func pollHack(mountPoint string) {
	fd, err := unix.Open(mountPoint+"/.go-fuse-epoll-hack", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
	unix.Close(fd)
}
