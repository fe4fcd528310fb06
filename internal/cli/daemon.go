package cli

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"log/syslog"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/sys/unix"
)

// readyByte is what the daemon child writes to the notify pipe once the
// file system is mounted.
const readyByte = 'R'

// daemonize re-runs this program as a detached child (new session) that
// mounts in the foreground, hands it the secret through an inherited pipe
// (never argv or the environment), and exits 0 once the child reports the
// mount is ready, or with the child's own exit code when it fails.
//
// secretIsKey says the secret is the master key the parent unlocked (a
// forward mount: the child opens with it and ignores the unlock flags in
// args).
func daemonize(a *App, args []string, secret []byte, secretIsKey bool) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("daemonize: %w", err)
	}
	notifyR, notifyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("daemonize: %w", err)
	}
	defer notifyR.Close()
	secretR, secretW, err := os.Pipe()
	if err != nil {
		notifyW.Close()
		return fmt.Errorf("daemonize: %w", err)
	}
	// fds 3 and 4 in the child are ExtraFiles[0] and [1].
	childArgs := []string{"mount", "--internal-notify-fd=3", "--internal-secret-fd=4"}
	if secretIsKey {
		childArgs = append(childArgs, "--internal-secret-is-key")
	}
	childArgs = append(childArgs, args...)
	cmd := exec.Command(exe, childArgs...)
	if f, ok := a.Stderr.(*os.File); ok {
		cmd.Stdout, cmd.Stderr = f, f // errors before the mount is ready reach the user
	}
	cmd.ExtraFiles = []*os.File{notifyW, secretR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	notifyW.Close()
	secretR.Close()
	if err != nil {
		secretW.Close()
		return fmt.Errorf("daemonize: start %s: %w", exe, err)
	}
	_, werr := secretW.Write(secret)
	secretW.Close()
	if werr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("daemonize: pass the secret to the child: %w", werr)
	}

	// Ctrl-C while waiting stops the child too.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for range sigs {
			cmd.Process.Signal(syscall.SIGTERM)
		}
	}()

	var buf [1]byte
	if n, _ := notifyR.Read(buf[:]); n == 1 && buf[0] == readyByte {
		cmd.Process.Release()
		return nil
	}
	// The child failed; it printed its own error line.
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() > 0 {
		return withCode(exit.ExitCode(), errQuiet)
	}
	return errorfCode(ExitMount, "the mount process ended without mounting (%v)", err)
}

// runDaemonChild is the re-executed child: it reads the secret from its
// pipe, mounts, tells the parent, then detaches from the terminal and logs
// to syslog.
func runDaemonChild(a *App, c *session.Config, cipherDir, mountPoint string, m mountFlags) error {
	notify := os.NewFile(uintptr(m.notifyFD), "notify")
	if notify == nil {
		return usageErrorf("mount: bad --internal-notify-fd")
	}
	defer notify.Close()
	secretFile := os.NewFile(uintptr(m.secretFD), "secret")
	if secretFile == nil {
		return usageErrorf("mount: bad --internal-secret-fd")
	}
	secret, err := io.ReadAll(io.LimitReader(secretFile, maxSecretLine))
	secretFile.Close()
	if err != nil {
		return withCode(ExitPassword, fmt.Errorf("mount: read the secret from the parent: %w", err))
	}
	defer clear(secret)
	if m.secretIsKey || m.unlock.masterKey {
		key, err := parseMasterKey(secret)
		if err != nil {
			return err
		}
		clear(secret)
		secret = key
	}
	out := &switchWriter{w: a.Stderr}
	logger := log.New(out, "encryptfs: ", 0)
	ready := func() error {
		if _, err := notify.Write([]byte{readyByte}); err != nil {
			return fmt.Errorf("mount: tell the parent: %w", err)
		}
		notify.Close()
		out.set(daemonLog())
		return detachStdio()
	}
	if m.rev.enabled {
		return serveReverse(a, c, cipherDir, mountPoint, m, m.rev, secret, logger, ready)
	}
	// The parent unlocked the vault (with whatever credential) and sent
	// its master key; on a format-2 vault OpenWithMasterKey checks the
	// config's MAC under it. A parent of another build that sent a
	// password is served too.
	// The daemon records freshness; its start-up report goes to the
	// mount's log (stderr until ready: the user's terminal).
	s, err := openSession(cipherDir, c, secret, m.secretIsKey || m.unlock.masterKey, mountSessionOptions(a, cipherDir, c, m, mountFreshness(m), logger))
	if err != nil {
		return mountFreshError(err, cipherDir)
	}
	defer s.Close()
	if err := mountChecked(s, cipherDir, m, logger); err != nil {
		return err
	}
	return serveForward(a, s, cipherDir, mountPoint, m, logger, ready)
}

// masterKeyWire is how the parent passes a master key to the child: the
// same hex form the user types.
func masterKeyWire(key []byte) []byte { return []byte(hex.EncodeToString(key)) }

// daemonLog returns a syslog writer, or a discarding one where there is no
// syslog (a daemon has no other place to write).
func daemonLog() io.Writer {
	w, err := syslog.New(syslog.LOG_NOTICE|syslog.LOG_DAEMON, "encryptfs")
	if err != nil {
		return io.Discard
	}
	return w
}

// detachStdio points fds 0, 1 and 2 at /dev/null, so the daemon holds no
// terminal and a closed terminal cannot kill it with EPIPE/EIO.
func detachStdio() error {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	for fd := 0; fd <= 2; fd++ {
		if err := unix.Dup3(int(null.Fd()), fd, 0); err != nil {
			return err
		}
	}
	return nil
}

// switchWriter lets the daemon move its log from stderr to syslog.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
}
