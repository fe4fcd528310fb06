package forwardfs_test

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestConcurrentTreeOps runs goroutines that create, write, rename, link,
// symlink, list and remove entries in a few shared directories at once
// (for the race detector and the directory-fd cache). Races between them
// may fail individual calls with ENOENT, EEXIST, ENOTEMPTY; anything else
// (EIO above all, or EINVAL from reading a symlink that a rename has just
// replaced) fails the test. Finally the tree must read back cleanly.
func TestConcurrentTreeOps(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	dirs := []string{"d0", "d1", "d1/d2", "d3"}
	for _, d := range dirs {
		must(t, os.MkdirAll(filepath.Join(v.Mnt, d), 0o755))
	}
	expected := func(err error) bool {
		return err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EEXIST) ||
			errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EISDIR)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			pick := func() string {
				return filepath.Join(v.Mnt, dirs[rng.Intn(len(dirs))], "e"+strconv.Itoa(rng.Intn(12)))
			}
			for range 300 {
				var err error
				op := rng.Intn(8)
				switch op {
				case 0:
					err = os.WriteFile(pick(), make([]byte, rng.Intn(70000)), 0o644)
				case 1:
					err = os.Rename(pick(), pick())
				case 2:
					err = os.Remove(pick())
				case 3:
					err = os.Symlink("target"+strconv.Itoa(w), pick())
				case 4:
					err = os.Link(pick(), pick())
					if errors.Is(err, unix.EPERM) { // a symlink or directory
						err = nil
					}
				case 5:
					err = os.Mkdir(pick(), 0o755)
				case 6:
					_, err = os.ReadDir(filepath.Join(v.Mnt, dirs[rng.Intn(len(dirs))]))
				case 7:
					_, err = os.ReadFile(pick())
					if errors.Is(err, unix.EISDIR) {
						err = nil
					}
				}
				if !expected(err) {
					errc <- fmt.Errorf("op %d: %w", op, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	err := filepath.Walk(v.Mnt, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			_, err = os.Readlink(p)
		case info.Mode().IsRegular():
			_, err = os.ReadFile(p)
		}
		return err
	})
	if err != nil {
		t.Fatalf("tree after concurrent ops: %v", err)
	}
	if s := v.Log.String(); s != "" {
		t.Errorf("daemon log:\n%s", s)
	}
}

// TestSymlinkRenameInodeReuse: a renamed symlink is re-created in the
// backing store, freeing its backing inode number; files created next may
// get that number. Every name must still read as what it is.
func TestSymlinkRenameInodeReuse(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	for i := range 20 {
		s := filepath.Join(v.Mnt, "s"+strconv.Itoa(i))
		must(t, os.Symlink("t"+strconv.Itoa(i), s))
		must(t, os.Rename(s, s+"r"))
		for j := range 3 {
			must(t, os.WriteFile(filepath.Join(v.Mnt, "f"+strconv.Itoa(i*3+j)), []byte(strconv.Itoa(i*3+j)), 0o644))
		}
	}
	for i := range 20 {
		if got, err := os.Readlink(filepath.Join(v.Mnt, "s"+strconv.Itoa(i)+"r")); err != nil || got != "t"+strconv.Itoa(i) {
			t.Errorf("symlink %d: %q %v", i, got, err)
		}
	}
	for k := range 60 {
		got, err := os.ReadFile(filepath.Join(v.Mnt, "f"+strconv.Itoa(k)))
		if err != nil || string(got) != strconv.Itoa(k) {
			t.Errorf("file %d: %q %v", k, got, err)
		}
	}
}

// TestOpenRacingRenameOver: a name flips between a symlink, a regular file
// and another regular file while other goroutines open and read through
// it. Every open must read one of the files whole, or fail with ENOENT
// (the symlink's missing target, or an object replaced between the
// kernel's lookup and the open); never EINVAL from reading a symlink that
// is no longer one, and never the contents of a newer file that reused a
// replaced file's inode number (seen as an empty read).
func TestOpenRacingRenameOver(t *testing.T) {
	v := mounttest.NewVault(t, nil)
	name := filepath.Join(v.Mnt, "x")
	srcs := []string{filepath.Join(v.Mnt, "s"), filepath.Join(v.Mnt, "f1"), filepath.Join(v.Mnt, "f2")}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer stop.Store(true)
		for i := range 1500 {
			var err error
			switch src := srcs[i%3]; i % 3 {
			case 0:
				err = os.Symlink("missing", src)
			default:
				err = os.WriteFile(src, []byte(src), 0o644)
			}
			if err == nil {
				err = os.Rename(srcs[i%3], name)
			}
			if err != nil {
				errc <- fmt.Errorf("renamer: %w", err)
				return
			}
		}
	}()
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				b, err := os.ReadFile(name)
				if err == nil && string(b) != srcs[1] && string(b) != srcs[2] {
					err = fmt.Errorf("read %q", b)
				}
				if err != nil && !errors.Is(err, unix.ENOENT) {
					errc <- fmt.Errorf("reader: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if s := v.Log.String(); s != "" {
		t.Errorf("daemon log:\n%s", s)
	}
}
