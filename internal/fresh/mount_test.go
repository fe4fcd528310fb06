package fresh_test

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { mounttest.Main(m) }

var (
	password = []byte("pw")
	vaultID  = bytes.Repeat([]byte{0x5d}, 16)
)

// testBuckets is the manifest layout the tests use: buckets (the layout
// of a new vault), or one file per directory (vaults not upgraded) when
// ENCRYPTFS_TEST_MANIFEST_FILES is set (scripts/test.sh runs the
// freshness tests again with it).
func testBuckets() bool { return os.Getenv("ENCRYPTFS_TEST_MANIFEST_FILES") == "" }

func options(state string, offline bool) session.Options {
	return session.Options{BoundVaultID: vaultID, Freshness: &fresh.Options{StateDir: state, Interval: -1, Offline: offline, Buckets: testBuckets()}}
}

// status is encryptfs freshness status.
func status(t *testing.T, dir, state string) *fresh.Report {
	t.Helper()
	return statusWith(t, dir, options(state, true))
}

// statusWith is status with the session options o (Freshness Offline).
func statusWith(t *testing.T, dir string, o session.Options) *fresh.Report {
	t.Helper()
	s, err := session.Open(dir, password, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := s.Freshness().Check()
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestMountRecords: what a FUSE mount changes (names through the tree,
// contents through its own writes, which freshness does not observe) is
// recorded so that status is clean after the unmount, and a file deleted
// from CIPHERDIR afterwards is reported on its plaintext path.
func TestMountRecords(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, state := newVault(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}

	var logb strings.Builder
	s, err := session.Open(dir, password, options(state, false))
	if err != nil {
		t.Fatal(err)
	}
	mounttest.Track(mnt)
	srv, err := mount.Mount(mount.Options{Session: s, MountPoint: mnt, Logger: log.New(&logb, "", 0)})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	unmounted := false
	t.Cleanup(func() {
		if !unmounted {
			if err := srv.Unmount(); err != nil {
				unix.Unmount(mnt, unix.MNT_DETACH)
			}
			s.Close()
		}
	})
	must := mustFor(t)
	must(os.MkdirAll(filepath.Join(mnt, "d", "e"), 0o755))
	must(os.WriteFile(filepath.Join(mnt, "d", "empty"), nil, 0o644))
	must(os.WriteFile(filepath.Join(mnt, "d", "f"), []byte("contents"), 0o644))
	// Written after its creation was recorded: the first write gives it
	// its header (and ID) through the FUSE layer alone.
	must(s.Freshness().Flush())
	must(os.WriteFile(filepath.Join(mnt, "d", "empty"), []byte("now written"), 0o644))
	must(unix.Setxattr(filepath.Join(mnt, "d", "f"), "user.k", []byte("v"), 0))
	must(unix.Setxattr(filepath.Join(mnt, "d"), "user.k", []byte("v"), 0))
	must(os.Symlink("target", filepath.Join(mnt, "d", "link")))
	must(os.Rename(filepath.Join(mnt, "d", "f"), filepath.Join(mnt, "d", "e", "g")))
	must(os.WriteFile(filepath.Join(mnt, "gone"), []byte("x"), 0o644))
	must(os.Remove(filepath.Join(mnt, "gone")))
	long := strings.Repeat("L", 200)
	must(os.WriteFile(filepath.Join(mnt, long), []byte("long name"), 0o644))
	must(srv.Unmount())
	unmounted = true
	must(s.Close())

	if rep := status(t, dir, state); rep.Status != fresh.OK {
		t.Fatalf("after the unmount: %s\nmount log:\n%s", rep, logb.String())
	}
	// A deletion in CIPHERDIR is reported on its plaintext path.
	o, err := session.Open(dir, password, session.Options{BoundVaultID: vaultID})
	must(err)
	root, err := os.Open(dir)
	must(err)
	defer root.Close()
	ents, _ := root.Readdirnames(-1)
	o.Close()
	for _, e := range ents {
		if strings.HasPrefix(e, "encryptfs.long.") && !strings.HasSuffix(e, ".name") {
			must(os.Remove(filepath.Join(dir, e)))
		}
	}
	rep := status(t, dir, state)
	found := false
	for _, i := range rep.Issues {
		found = found || i.Path == "/"+long && strings.Contains(i.What, "deleted")
	}
	if rep.Status != fresh.Behind || !found {
		t.Fatalf("long-named file deleted: %s", rep)
	}
}

// mustFor returns a check that fails t at once on a non-nil error.
func mustFor(t *testing.T) func(error) {
	return func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}
