package mount

import (
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestConcurrentTreeOps runs goroutines that create, write, rename, link,
// symlink, list and remove entries in a few shared directories at once
// (for the race detector and the directory-fd cache). Races between them
// may fail individual calls with ENOENT, EEXIST, ENOTEMPTY; anything else
// (EIO above all) fails the test. Finally the tree must read back cleanly.
func TestConcurrentTreeOps(t *testing.T) {
	v := newVault(t, nil)
	dirs := []string{"d0", "d1", "d1/d2", "d3"}
	for _, d := range dirs {
		must(t, os.MkdirAll(filepath.Join(v.mnt, d), 0o755))
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
				return filepath.Join(v.mnt, dirs[rng.Intn(len(dirs))], "e"+strconv.Itoa(rng.Intn(12)))
			}
			for range 300 {
				var err error
				switch rng.Intn(8) {
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
					_, err = os.ReadDir(filepath.Join(v.mnt, dirs[rng.Intn(len(dirs))]))
				case 7:
					_, err = os.ReadFile(pick())
					if errors.Is(err, unix.EISDIR) {
						err = nil
					}
				}
				if !expected(err) {
					errc <- err
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
	err := filepath.Walk(v.mnt, func(p string, info os.FileInfo, err error) error {
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
	if s := v.log.String(); s != "" {
		t.Errorf("daemon log:\n%s", s)
	}
}

// TestSymlinkRenameInodeReuse: a renamed symlink is re-created in the
// backing store, freeing its backing inode number; files created next may
// get that number. Every name must still read as what it is.
func TestSymlinkRenameInodeReuse(t *testing.T) {
	v := newVault(t, nil)
	for i := range 20 {
		s := filepath.Join(v.mnt, "s"+strconv.Itoa(i))
		must(t, os.Symlink("t"+strconv.Itoa(i), s))
		must(t, os.Rename(s, s+"r"))
		for j := range 3 {
			must(t, os.WriteFile(filepath.Join(v.mnt, "f"+strconv.Itoa(i*3+j)), []byte(strconv.Itoa(i*3+j)), 0o644))
		}
	}
	for i := range 20 {
		if got, err := os.Readlink(filepath.Join(v.mnt, "s"+strconv.Itoa(i)+"r")); err != nil || got != "t"+strconv.Itoa(i) {
			t.Errorf("symlink %d: %q %v", i, got, err)
		}
	}
	for k := range 60 {
		got, err := os.ReadFile(filepath.Join(v.mnt, "f"+strconv.Itoa(k)))
		if err != nil || string(got) != strconv.Itoa(k) {
			t.Errorf("file %d: %q %v", k, got, err)
		}
	}
}
