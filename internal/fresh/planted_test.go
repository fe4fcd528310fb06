package fresh_test

import (
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/crypto/fresh"
	fr "github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/sys/unix"
)

// mountWriter mounts dir as the device of state; unmount ends the mount
// and the session (also at cleanup when the test did not).
func mountWriter(t *testing.T, dir, state string) (mnt string, s *session.Session, unmount func() error) {
	t.Helper()
	return mountWith(t, dir, options(state, false))
}

// mountWith is mountWriter with the session options o.
func mountWith(t *testing.T, dir string, o session.Options) (mnt string, s *session.Session, unmount func() error) {
	t.Helper()
	fstest.RequireFUSE(t)
	mnt = filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(dir, password, o)
	if err != nil {
		t.Fatal(err)
	}
	mounttest.Track(mnt)
	var logb strings.Builder
	srv, err := mount.Mount(mount.Options{Session: s, MountPoint: mnt, Logger: log.New(&logb, "", 0)})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	done := false
	unmount = func() error {
		if done {
			return nil
		}
		done = true
		err := srv.Unmount()
		if err != nil {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		return err
	}
	t.Cleanup(func() { unmount() })
	return mnt, s, unmount
}

// ownManifests is the manifests directory of the only device that wrote
// dir.
func ownManifests(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, fresh.ManifestsPrefix+"*"))
	if len(m) != 1 {
		t.Fatalf("manifests directories: %q", m)
	}
	return m[0]
}

// TestPlantedSymlinksWriteNothingOutside: someone who writes CIPHERDIR
// plants symlinks where the mount writes its freshness files (the
// temporary files of the epoch and of a manifest, the epoch itself, the
// whole manifests directory), pointing outside the vault. The mount's
// batches must never write through them: the files they point to keep
// their contents, and no file appears in the directory they point to.
func TestPlantedSymlinksWriteNothingOutside(t *testing.T) {
	dir, state := newVault(t)
	mnt, s, unmount := mountWriter(t, dir, state)
	must := mustFor(t)
	must(os.WriteFile(filepath.Join(mnt, "a"), []byte("one"), 0o644))
	must(s.Freshness().Flush())

	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	const precious = "precious, outside the vault"
	must(os.WriteFile(victim, []byte(precious), 0o644))
	man := ownManifests(t, dir)
	ents, err := os.ReadDir(man)
	must(err)
	for _, e := range ents { // every manifest's temporary name, and the epoch's
		must(os.Symlink(victim, filepath.Join(man, e.Name()+fresh.TempSuffix)))
	}
	must(os.Symlink(victim, filepath.Join(man, "epoch"+fresh.TempSuffix)))
	epochs, _ := filepath.Glob(filepath.Join(dir, fresh.EpochPrefix+"*"))
	if len(epochs) != 1 {
		t.Fatalf("epoch files: %q", epochs)
	}

	must(os.WriteFile(filepath.Join(mnt, "b"), []byte("two"), 0o644))
	must(os.Remove(filepath.Join(mnt, "a")))
	must(s.Freshness().Flush())
	if b, _ := os.ReadFile(victim); string(b) != precious {
		t.Fatalf("a planted temporary-file symlink was written through: victim holds %q", b)
	}

	// The epoch itself replaced by a symlink: the next batch replaces the
	// link, never writes through it.
	must(os.Remove(epochs[0]))
	must(os.Symlink(victim, epochs[0]))
	must(os.WriteFile(filepath.Join(mnt, "c"), []byte("three"), 0o644))
	must(s.Freshness().Flush())
	if b, _ := os.ReadFile(victim); string(b) != precious {
		t.Fatalf("a planted epoch symlink was written through: victim holds %q", b)
	}
	if st, err := os.Lstat(epochs[0]); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("epoch after the batch: %v, %v", st, err)
	}

	// The whole manifests directory replaced by a symlink to a directory
	// outside: the batch fails (reported), nothing is created there.
	elsewhere := t.TempDir()
	must(os.RemoveAll(man))
	must(os.Symlink(elsewhere, man))
	must(os.WriteFile(filepath.Join(mnt, "d"), []byte("four"), 0o644))
	if err := s.Freshness().Flush(); err == nil {
		t.Errorf("a batch through a symlinked manifests directory succeeded")
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatalf("the mount created %d files through a symlinked manifests directory", len(ents))
	}
	if b, _ := os.ReadFile(victim); string(b) != precious {
		t.Fatalf("victim holds %q", b)
	}
	must(os.Remove(man))
	unmount()
}

// TestPlantedFIFOsHangNothing: FIFOs in place of the epoch and of a
// manifest make the check report them as malformed, at once: nothing
// opens a FIFO (an open for reading waits for a writer forever).
func TestPlantedFIFOsHangNothing(t *testing.T) {
	dir, state := newVault(t)
	mnt, s, unmount := mountWriter(t, dir, state)
	if err := os.WriteFile(filepath.Join(mnt, "a"), []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unmount(); err != nil {
		t.Fatal(err)
	}
	_ = s
	man := ownManifests(t, dir)
	ents, _ := os.ReadDir(man)
	epochs, _ := filepath.Glob(filepath.Join(dir, fresh.EpochPrefix+"*"))
	if len(ents) == 0 || len(epochs) != 1 {
		t.Fatalf("manifests %d, epochs %q", len(ents), epochs)
	}
	for _, p := range []string{epochs[0], filepath.Join(man, ents[0].Name())} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan *fr.Report, 1)
	go func() { done <- status(t, dir, state) }()
	select {
	case rep := <-done:
		if rep.Status == fr.OK {
			t.Fatalf("FIFOs in place of the epoch and a manifest: status OK\n%s", rep)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("status hangs on a FIFO planted in place of a freshness file")
	}
}
