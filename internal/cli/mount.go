package cli

import (
	"errors"
	"fmt"
	"github.com/spf13/cobra"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/mount"
	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/sys/unix"
)

func newMountCommand(a *App) *cobra.Command {
	cmd := newCommand("mount", "CIPHERDIR MOUNTPOINT", 2, 2, groupMount, "mount a vault (daemonizes unless -f)", dirArg)
	fs := cmd.Flags()
	var m mountFlags
	m.register(fs)
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		cipherDir, mountPoint, err := absPaths(pos[0], pos[1])
		if err != nil {
			return err
		}
		if len(m.rev.excludes) > 0 && !m.rev.enabled {
			return usageErrorf("mount: --exclude needs --reverse")
		}
		if m.rev.oneFS && !m.rev.enabled {
			return usageErrorf("mount: --one-file-system needs --reverse")
		}
		if _, err := m.transportMode(os.Getenv); err != nil {
			return err
		}
		if err := checkFreshnessMode(m); err != nil {
			return err
		}
		load := a.loadConfig
		if m.rev.enabled {
			load = a.loadReverseConfig
		}
		c, err := load(cipherDir)
		if err != nil {
			return err
		}
		if err := checkMountPoint(cipherDir, mountPoint); err != nil {
			return err
		}
		if m.notifyFD < 0 && !m.rev.enabled {
			if err := checkNotMounted(cipherDir, c, m.stateDir); err != nil {
				return err
			}
		}
		if !m.readOnly && !m.rev.enabled && onReadOnlyFS(cipherDir) {
			// Writes could not reach the backing files: mount read-only rather
			// than fail on the first write. The daemon child repeats the check
			// silently; the user sees the note once.
			m.readOnly = true
			if m.notifyFD < 0 {
				fmt.Fprintf(a.Stderr, "encryptfs: note: %s is on a read-only file system; mounting read-only\n", cipherDir)
			}
		}
		if m.notifyFD >= 0 {
			return runDaemonChild(a, c, cipherDir, mountPoint, m)
		}
		if m.rev.enabled {
			return mountReverse(a, c, cipherDir, mountPoint, m)
		}
		// Every forward mount unlocks here, in the foreground process: an
		// identity's plugin may ask for a PIN or a touch, and every prompt
		// and refusal belongs on the user's terminal. The daemon child gets
		// the master key.
		// Only a foreground mount serves this session: it records
		// freshness; a background one hands the key to the daemon child,
		// which does.
		logger := log.New(a.Stderr, "encryptfs: ", log.LstdFlags)
		use := session.FreshnessOff
		if m.foreground {
			use = mountFreshness(m)
		}
		s, err := a.unlockVaultWith(cipherDir, c, m.unlock, "Password", mountSessionOptions(a, cipherDir, c, m, use, logger))
		if err != nil {
			return mountFreshError(err, cipherDir)
		}
		if !m.foreground {
			key := s.MasterKey()
			s.Close()
			defer clear(key)
			wire := masterKeyWire(key)
			defer clear(wire)
			return daemonize(a, a.cmdArgs, wire, true)
		}
		defer s.Close()
		if err := mountChecked(s, cipherDir, m, logger); err != nil {
			return err
		}
		return serveForward(a, s, cipherDir, mountPoint, m, logger, nil)
	}
	return cmd
}

// mountReverse mounts the reverse view of PLAINDIR (format 1 only): the
// daemon child unlocks with the password or master key the parent read.
func mountReverse(a *App, c *session.Config, plainDir, mountPoint string, m mountFlags) error {
	if len(m.unlock.keyfiles) > 0 || len(m.unlock.identities) > 0 || len(m.unlock.credentials) > 0 {
		return usageErrorf("mount: --reverse opens with a password or the master key; keyfiles, identities and credentials are for format-2 vaults")
	}
	secret, err := readMountSecret(a, m)
	if err != nil {
		return err
	}
	defer clear(secret)
	if !m.foreground {
		wire := secret
		if m.unlock.masterKey {
			wire = masterKeyWire(secret)
			defer clear(wire)
		}
		return daemonize(a, a.cmdArgs, wire, false)
	}
	logger := log.New(a.Stderr, "encryptfs: ", log.LstdFlags)
	return serveReverse(a, c, plainDir, mountPoint, m, m.rev, secret, logger, nil)
}

// readMountSecret reads the password, or the master key with --recovery-key
// (reverse mounts).
func readMountSecret(a *App, m mountFlags) ([]byte, error) {
	if m.unlock.masterKey {
		if m.unlock.src != (passSource{}) {
			return nil, usageErrorf("mount: --recovery-key replaces the password; drop --passfile/--extpass")
		}
		return a.readMasterKey("master key")
	}
	return a.readPassword(m.unlock.src, "Password", false)
}

// serveForward mounts the unlocked vault s, reports readiness through ready (if
// not nil) and serves until unmounted or signalled.
func serveForward(a *App, s *session.Session, cipherDir, mountPoint string, m mountFlags, logger *log.Logger, ready func() error) error {
	fsName := m.fsName
	if fsName == "" {
		fsName = cipherDir
	}
	// The kernel has already applied the calling process's umask to the mode
	// of every CREATE/MKDIR/MKNOD it sends; the daemon's own umask must not
	// be applied a second time to the backing entries (0666 would become
	// 0644). This process is the daemon, so it owns its umask.
	unix.Umask(0)
	transport, err := m.transportMode(os.Getenv)
	if err != nil {
		return err
	}
	// A SIGINT or SIGTERM while mounting must not kill the daemon: mount.Mount
	// ends with a request to the new mount from this process (go-fuse's poll
	// probe), and a daemon killed while one of its own threads waits for its
	// own answer can never close /dev/fuse, so nothing would end the mount.
	// The signal is held and acted on once mounted.
	early := make(chan os.Signal, 1)
	signal.Notify(early, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(early)
	srv, err := mount.Mount(mount.Options{
		Session: s, MountPoint: mountPoint,
		ReadOnly: m.readOnly, AllowOther: m.allowOther, SharedStorage: m.sharedStorage, ShowUndecryptable: m.showBad, ForceOwner: m.forceOwner, Debug: m.debug,
		Idle: m.idle, FsName: fsName, ExtraOptions: m.extra, Logger: logger, Transport: transport,
	})
	if err != nil {
		return withCode(ExitMount, fmt.Errorf("mount %s: %w", mountPoint, err))
	}
	giveWaitersProcs(srv)
	// From here on a signal unmounts (UnmountOnSignal); one held while
	// mounting is acted on now. The handler is installed before early stops
	// listening, so no signal falls between the two.
	stop := srv.UnmountOnSignal()
	signal.Stop(early)
	select {
	case sig := <-early:
		stop()
		logger.Printf("%v while mounting: unmounting %s", sig, mountPoint)
		if err := srv.Unmount(); err != nil {
			logger.Printf("%v", err)
		}
		return nil
	default:
	}
	return serveMounted(srv, stop, ready, logger, fmt.Sprintf("mounted %s on %s (transport: %s)", cipherDir, mountPoint, srv.DescribeTransport()), mountPoint)
}

// server is what forward and reverse mounts have in common once mounted.
type server interface {
	UnmountOnSignal() (stop func())
	Unmount() error
	Wait()
}

// runServer reports readiness (unmounting again if that fails), then serves
// until the file system is unmounted or the process is signalled.
func runServer(srv server, ready func() error, logger *log.Logger, mounted, mountPoint string) error {
	return serveMounted(srv, srv.UnmountOnSignal(), ready, logger, mounted, mountPoint)
}

// serveMounted is runServer for a server whose signal handler is already
// installed (stop removes it).
func serveMounted(srv server, stop func(), ready func() error, logger *log.Logger, mounted, mountPoint string) error {
	defer stop()
	if ready != nil {
		if err := ready(); err != nil {
			srv.Unmount()
			return err
		}
	}
	logger.Print(mounted)
	defer startStatsFile(os.Getenv(statsFileEnv))()
	srv.Wait()
	logger.Printf("unmounted %s", mountPoint)
	return nil
}

// onReadOnlyFS reports whether dir lies on a file system mounted read-only.
func onReadOnlyFS(dir string) bool {
	return unix.Access(dir, unix.W_OK) == unix.EROFS
}

func absPaths(paths ...string) (string, string, error) {
	var out [2]string
	for i, p := range paths[:2] {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", "", withCode(ExitUsage, err)
		}
		out[i] = abs
	}
	return out[0], out[1], nil
}

// checkMountPoint requires an empty directory outside the CIPHERDIR (a
// mount inside its own backing tree would recurse).
func checkMountPoint(cipherDir, mountPoint string) error {
	if err := checkDir(mountPoint, ExitMountPoint, "MOUNTPOINT"); err != nil {
		return err
	}
	if fstype, err := mountType(mountPoint); err == nil && strings.HasPrefix(fstype, "fuse.encryptfs") {
		return errorfCode(ExitMountPoint, "MOUNTPOINT %s is already an encryptfs mount", mountPoint)
	}
	realCipher, err1 := filepath.EvalSymlinks(cipherDir)
	realMount, err2 := filepath.EvalSymlinks(mountPoint)
	if err := errors.Join(err1, err2); err != nil {
		return withCode(ExitMountPoint, err)
	}
	if realMount == realCipher || strings.HasPrefix(realMount, realCipher+string(filepath.Separator)) {
		return errorfCode(ExitMountPoint, "MOUNTPOINT %s is inside CIPHERDIR %s", mountPoint, cipherDir)
	}
	d, err := os.Open(mountPoint)
	if err != nil {
		return withCode(ExitMountPoint, err)
	}
	defer d.Close()
	if names, err := d.Readdirnames(1); len(names) > 0 {
		return errorfCode(ExitMountPoint, "MOUNTPOINT %s is not empty", mountPoint)
	} else if err != nil && !errors.Is(err, io.EOF) {
		return withCode(ExitMountPoint, err)
	}
	return nil
}
