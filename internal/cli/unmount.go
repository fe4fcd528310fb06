package cli

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/spf13/cobra"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/sys/unix"
)

func newUnmountCommand(a *App) *cobra.Command {
	cmd := newCommand("unmount", "MOUNTPOINT", 1, 1, groupMount, "unmount a mounted vault", dirArg)
	fs := cmd.Flags()
	lazy := fs.Bool("lazy", false, "detach now even if busy; the mount goes away once unused")
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		mnt, err := filepath.Abs(pos[0])
		if err != nil {
			return withCode(ExitUsage, err)
		}
		if real, err := filepath.EvalSymlinks(mnt); err == nil {
			mnt = real
		}
		fstype, err := mountType(mnt)
		if err != nil {
			return withCode(ExitUnmount, err)
		}
		if !strings.HasPrefix(fstype, "fuse") {
			return errorfCode(ExitUnmount, "%s is a %s mount, not an encryptfs (FUSE) mount", mnt, fstype)
		}
		src := mountSource(mnt)
		if err := unmount(mnt, *lazy); err != nil {
			return withCode(ExitUnmount, err)
		}
		if !*lazy {
			// freshness's last batch (freshopts.go)
			if dir := waitMountEnded(src); dir != "" && session.HasUnrecordedChanges(dir) {
				return errorfCode(ExitUnrecorded, "unmounted %s, but the mount could not write its last freshness records in %s (is it full?); they are kept on this machine and the next mount writes them", mnt, src)
			}
		}
		return nil
	}
	return cmd
}

// unmount uses umount2 as root and fusermount3 otherwise (or when umount2
// is refused).
func unmount(mnt string, lazy bool) error {
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = unix.MNT_DETACH
		}
		err := unix.Unmount(mnt, flags)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("unmount %s: %w", mnt, err)
		}
	}
	args := []string{"-u"}
	if lazy {
		args = append(args, "-z")
	}
	out, err := exec.Command("fusermount3", append(args, "--", mnt)...).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("unmount %s: %s", mnt, msg)
	}
	return nil
}

// mountType returns the file system type mounted at mnt (the last mount
// on that path), from /proc/self/mountinfo.
func mountType(mnt string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	fstype := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source super
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || unescapeMountinfo(fields[4]) != mnt {
			continue
		}
		for i := 5; i < len(fields)-1; i++ {
			if fields[i] == "-" {
				fstype = fields[i+1]
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if fstype == "" {
		return "", fmt.Errorf("%s is not mounted", mnt)
	}
	return fstype, nil
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
