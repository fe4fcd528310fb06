package fresh_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/sys/unix"
)

// TestTimerWaitsForQuiet: while a user's requests flow, through the FUSE
// mount or the library, the timer's batches wait (quiet.go); once they
// stop, the batch follows. The timer fires every 40 ms, so a timer that
// did not wait would batch about 25 times during the second of lookups.
func TestTimerWaitsForQuiet(t *testing.T) {
	for _, door := range []string{"mount", "library"} {
		t.Run(door, func(t *testing.T) {
			dir, state := newVault(t)
			o := options(state, false)
			o.Freshness.Interval = 40 * time.Millisecond
			o.Freshness.Quiet = 150 * time.Millisecond
			o.Freshness.MaxDelay = time.Hour // Close ends the wait
			s, err := session.Open(dir, password, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			// stat is a request that reaches the engine each time: a
			// lookup of a name that is not there (a new one each call,
			// so that the kernel's negative entries do not answer it).
			var stat func(name string) error
			if door == "mount" {
				stat = mountDoor(t, s)
			} else {
				v, err := vault.FromSession(s)
				if err != nil {
					t.Fatal(err)
				}
				stat = func(name string) error { _, err := v.Stat(name); return err }
			}
			batches := s.Freshness().Changes().Batches()
			before := batches.Load()
			for i, end := 0, time.Now().Add(time.Second); time.Now().Before(end); i++ {
				if err := stat(fmt.Sprintf("absent-%d", i)); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("stat of an absent name: %v", err)
				}
			}
			// One batch may have been waiting from before the loop,
			// or a stall of the loop (a loaded machine) may let one go.
			if n := batches.Load() - before; n > 2 {
				t.Fatalf("%d batches during a second of requests", n)
			}
			during := batches.Load()
			for end := time.Now().Add(30 * time.Second); batches.Load() == during; {
				if time.Now().After(end) {
					t.Fatal("no batch 30 s after the requests stopped")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// mountDoor mounts session s for the test and returns a stat of a name
// in the mount's root.
func mountDoor(t *testing.T, s *session.Session) func(string) error {
	t.Helper()
	fstest.RequireFUSE(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	mounttest.Track(mnt)
	srv, err := mount.Mount(mount.Options{Session: s, MountPoint: mnt, Logger: log.New(os.Stderr, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
	})
	return func(name string) error { _, err := os.Stat(filepath.Join(mnt, name)); return err }
}
