package fresh

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// WaitUnlocked waits up to d for no process to hold the lock of state
// directory dir, polling, and reports whether none does (also when dir
// has no lock file). Why: `encryptfs unmount` returns once the kernel
// let go of the mount, while the mount's daemon may still be writing its
// last batch; a status or accept right after it waits for that rather
// than checking a vault its last writer has not finished recording.
func WaitUnlocked(dir string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		f, err := openLock(dir, unix.O_RDONLY)
		if errors.Is(err, os.ErrNotExist) {
			return true
		}
		if err == nil {
			err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
			f.Close() // releases the lock taken
			if err == nil {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
