package cli

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// Helpers for the tests that run a real storage tool next to encryptfs
// (rclone, Syncthing): the tool is a Debian package that scripts/setup.sh
// installs; every server listens on 127.0.0.1 only, and every process is
// stopped when the test ends.

// requireTool returns the path of program name, skipping the test when it
// is missing, except under CI=true, where it fails: CI installs it.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	return fstest.RequireTool(t, name)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitPort waits (at most 20 s) until 127.0.0.1:port accepts connections.
func waitPort(t *testing.T, port int) {
	t.Helper()
	waitFor(t, "port "+strconv.Itoa(port), func() bool {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// lockedBuffer collects a child's output for failure messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// daemon is a child process the test started; stop ends it (SIGTERM, then
// SIGKILL after 10 s) and is also called in t.Cleanup.
type daemon struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	once sync.Once
	done chan struct{}
}

// startDaemon starts prog with args; its output is kept for messages.
func startDaemon(t *testing.T, prog string, args ...string) *daemon {
	t.Helper()
	return startDaemonEnv(t, nil, prog, args...)
}

// startDaemonEnv is startDaemon with env (nil: the test's environment).
func startDaemonEnv(t *testing.T, env []string, prog string, args ...string) *daemon {
	t.Helper()
	d := &daemon{cmd: exec.Command(prog, args...), out: &lockedBuffer{}, done: make(chan struct{})}
	d.cmd.Env = env
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", prog, err)
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	t.Cleanup(d.stop)
	return d
}

func (d *daemon) stop() {
	d.once.Do(func() {
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			d.cmd.Process.Kill()
			<-d.done
		}
	})
}

// fusermountEnv returns an environment in which "fusermount" is found:
// rclone 1.60's mount runs fusermount, which Debian's fuse3 package names
// fusermount3 (nil: the test's environment has it already).
func fusermountEnv(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("fusermount"); err == nil {
		return nil
	}
	fm3, err := exec.LookPath("fusermount3")
	if err != nil {
		t.Fatalf("no fusermount3: %v", err)
	}
	bin := t.TempDir()
	must(t, os.Symlink(fm3, filepath.Join(bin, "fusermount")))
	return append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// fusermountU unmounts a FUSE mount the test made with a tool (rclone
// mount), retrying while it is busy for up to 10 s.
func fusermountU(t *testing.T, mnt string) {
	t.Helper()
	var out []byte
	var err error
	for range 100 {
		if out, err = exec.Command("fusermount3", "-u", mnt).CombinedOutput(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("fusermount3 -u %s: %v %s", mnt, err, out)
}

// makeTree writes a small tree of files into dir: sizes around the chunk
// size, nested directories, a long name (a long-name sidecar in
// CIPHERDIR), a name with spaces and UTF-8, a symlink and an empty
// directory.
func makeTree(t *testing.T, dir string) {
	t.Helper()
	sizes := []int{0, 1, 4095, 4096, 4097, 20_000, 65_536, 200_001}
	for d := range 4 {
		sub := filepath.Join(dir, fmt.Sprintf("dir%d", d), "inner")
		must(t, os.MkdirAll(sub, 0o755))
		for i, n := range sizes {
			name := fmt.Sprintf("f%d-%d.bin", d, i)
			must(t, os.WriteFile(filepath.Join(filepath.Dir(sub), name), fileContent(name, n), 0o644))
			if i%3 == 0 {
				must(t, os.WriteFile(filepath.Join(sub, name), fileContent("inner"+name, n/2), 0o600))
			}
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, strings.Repeat("long-name-", 18)), []byte("long\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "spaced name ü.txt"), []byte("utf-8\n"), 0o644))
	must(t, os.Symlink("dir0/f0-1.bin", filepath.Join(dir, "link")))
	must(t, os.Mkdir(filepath.Join(dir, "empty"), 0o755))
}

// diffTrees fails the test unless diff -r finds a and b equal (contents,
// names, symlink targets); exclude names entries to leave out.
func diffTrees(t *testing.T, a, b string, exclude ...string) {
	t.Helper()
	args := []string{"-r", "--no-dereference"}
	for _, x := range exclude {
		args = append(args, "-x", x)
	}
	out, err := exec.Command("diff", append(args, a, b)...).CombinedOutput()
	if err != nil {
		t.Fatalf("diff -r %s %s: %v\n%s", a, b, err, out)
	}
}

// fileSums maps the relative path of every regular file under dir to the
// SHA-256 of its contents.
func fileSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sums[rel] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}
