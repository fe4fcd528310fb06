package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns a pseudo-terminal pair: the master (we type into it) and
// the terminal (the child's stdin).
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// runTTY runs the binary with a terminal on stdin into which typed is
// written up front.
func runTTY(t *testing.T, typed string, args ...string) result {
	t.Helper()
	master, tty := openPTY(t)
	if _, err := master.WriteString(typed); err != nil {
		t.Fatal(err)
	}
	// Drain the terminal's output (prompts go to stderr, not here, but the
	// line discipline may echo) so that the child never blocks on it.
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = tty
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func TestTerminalPassword(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v")
	init := append(append([]string{"init"}, cheapKDF...), dir)
	r := runTTY(t, "one\ntwo\n", init...)
	r.wantTTY(t, ExitPassword, "encryptfs: the passwords do not match\n")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a failed init left the directory it made: %v", err)
	}
	// An empty password is refused at once, not asked for again.
	r = runTTY(t, "\nsecond\n", init...)
	r.wantTTY(t, ExitPassword, "encryptfs: the password is empty; an empty password is refused (type one, or give --passfile FILE)\n")
	if strings.Contains(r.stderr, "Repeat") {
		t.Fatalf("an empty password was asked again:\n%s", r.stderr)
	}
	// A directory that was there before stays (empty).
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	runTTY(t, "one\ntwo\n", init...).wantTTY(t, ExitPassword, "encryptfs: the passwords do not match\n")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("init removed a directory it did not make: %v", err)
	}
	r = runTTY(t, "secret\nsecret\n", init...)
	if r.code != 0 || !bytes.Contains([]byte(r.stderr), []byte("Repeat new password")) {
		t.Fatalf("init on a terminal: %+v", r)
	}
	if bytes.Contains([]byte(r.stdout+r.stderr), []byte("secret")) {
		t.Fatal("the password was echoed")
	}
	// The terminal password unlocks: passwd reads the current password
	// once, then the new one twice.
	runTTY(t, "wrong\n", "passwd", dir).wantTTY(t, ExitWrongPassword, "encryptfs: "+wrongPasswordMessage+"\n")
	runTTY(t, "secret\nnew\nnew\n", "passwd", dir).wantTTY(t, 0, "")
	run(t, "", "passwd", "--passfile", writePassfile(t, "new"), "--new-passfile", writePassfile(t, "x"), dir).want(t, 0)
}

// wantTTY checks the exit code and that stderr (prompts, then at most the
// error line) ends with lastLine.
func (r result) wantTTY(t *testing.T, code int, lastLine string) {
	t.Helper()
	if r.code != code || !strings.HasSuffix(r.stderr, lastLine) {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", r.code, code, r.stderr)
	}
}
