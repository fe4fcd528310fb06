package mounttest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A test must not touch a mapping of a file on a mount its own process
// serves: the page fault blocks a thread outside a system call, the Go
// runtime's stop-the-world (GC) then waits for that thread, and the
// daemon goroutines that would answer the fault are stopped with the
// world: a deadlock, which hangs the test now and then (a goroutine dump
// shows the test goroutine "running" and the GC in forEachP). So
// MapShared maps the file in a child process, the test binary re-executed
// with mapChildEnv set, and asks it for bytes over a pipe.

const mapChildEnv = "ENCRYPTFS_MOUNTTEST_MAP_CHILD"

// Mapping is a file mapped MAP_SHARED, read-only, by a child process.
type Mapping struct {
	t   testing.TB
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// MapShared opens path read-only in a child process and maps its first
// size bytes MAP_SHARED. An error is the open's or the mmap's (ENODEV
// when the kernel refuses a shared mapping, as for a direct_io handle).
// The child closes its descriptor once mapped, as a program that maps a
// file and closes it would. The mapping ends with Close or the test.
func MapShared(t testing.TB, path string, size int) (*Mapping, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, path, strconv.Itoa(size))
	// A binary built with -race sleeps 1 s at exit unless told not to:
	// 200 mappings would take 200 s.
	cmd.Env = append(os.Environ(), mapChildEnv+"=1",
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &Mapping{t: t, cmd: cmd, in: in, out: bufio.NewReader(outPipe)}
	t.Cleanup(m.Close)
	line, err := m.out.ReadString('\n')
	if err != nil {
		m.Close()
		t.Fatalf("map child: %v", err)
	}
	if msg, ok := strings.CutPrefix(strings.TrimSpace(line), "error "); ok {
		m.Close()
		n, _ := strconv.Atoi(msg)
		return nil, unix.Errno(n)
	}
	return m, nil
}

// Byte returns the mapped byte at off, as the child's load reads it.
func (m *Mapping) Byte(off int) byte {
	m.t.Helper()
	fmt.Fprintln(m.in, off)
	line, err := m.out.ReadString('\n')
	if err != nil {
		m.t.Fatalf("map child: %v", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		m.t.Fatalf("map child answered %q", line)
	}
	return byte(v)
}

// Close unmaps the file: the child exits. It may be called more than once.
func (m *Mapping) Close() {
	if m.in == nil {
		return
	}
	m.in.Close()
	m.in = nil
	m.cmd.Wait()
}

func init() {
	if os.Getenv(mapChildEnv) != "1" {
		return
	}
	os.Exit(mapChildMain(os.Args[1:], os.Stdin, os.Stdout))
}

// mapChildMain maps args[0]'s first args[1] bytes and answers each offset
// read from in with the byte there, until in ends. Its first line says
// "ok" or "error ERRNO".
func mapChildMain(args []string, in io.Reader, out io.Writer) int {
	size, _ := strconv.Atoi(args[1])
	fd, err := unix.Open(args[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		var m []byte
		m, err = unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED)
		unix.Close(fd)
		if err == nil {
			defer unix.Munmap(m)
			fmt.Fprintln(out, "ok")
			return serveBytes(m, in, out)
		}
	}
	var errno unix.Errno
	if !errors.As(err, &errno) {
		errno = unix.EIO
	}
	fmt.Fprintln(out, "error", int(errno))
	return 0
}

// serveBytes answers each offset line from in with m's byte there.
func serveBytes(m []byte, in io.Reader, out io.Writer) int {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		off, err := strconv.Atoi(sc.Text())
		if err != nil || off < 0 || off >= len(m) {
			fmt.Fprintln(os.Stderr, "map child: bad offset", sc.Text())
			return 2
		}
		fmt.Fprintln(out, m[off])
	}
	return 0
}
