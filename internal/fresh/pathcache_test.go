package fresh

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// TestPathCacheAgreesWithKernel: a writer that caches backing paths
// (pathcache.go) notes exactly the names that one asking the kernel for
// every path notes, through directory renames, file renames, exchanges,
// unlinks and inode numbers used again, hard links and fds of files that
// moved.
func TestPathCacheAgreesWithKernel(t *testing.T) {
	dir := t.TempDir()
	newVault := func(shared bool) *Vault {
		v, err := New(dir, make([]byte, 32), Options{StateDir: t.TempDir(), Interval: -1, SharedStorage: shared})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { v.Close() })
		return v
	}
	cached, kernel := newVault(false), newVault(true)
	if cached.paths == nil || kernel.paths != nil {
		t.Fatal("SharedStorage does not choose the path cache")
	}
	fs := kernel.Observe(cached.Observe(nil))
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close(root)
	opened := map[string]int{}
	t.Cleanup(func() {
		for _, fd := range opened {
			backing.Close(fd)
		}
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	dirfd := func(rel string) int {
		t.Helper()
		if fd, ok := opened["dir:"+rel]; ok {
			return fd
		}
		fd, err := backing.OpenDir(root, rel)
		must(err)
		opened["dir:"+rel] = fd
		return fd
	}
	create := func(d, name, as string) {
		t.Helper()
		fd, err := fs.Openat(dirfd(d), name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR, 0o600)
		must(err)
		opened[as] = fd
	}
	steps := []struct {
		what string
		do   func()
	}{ // a step whose name says "(none)" notes nothing
		{"mkdir a", func() { must(fs.Mkdirat(root, "a", 0o700)) }},
		{"mkdir a/b", func() { must(fs.Mkdirat(dirfd("a"), "b", 0o700)) }},
		{"create a/b/f", func() { create("a/b", "f", "f") }},
		{"fsync f", func() { must(fs.Fsync(opened["f"])) }},
		{"fsync a/b", func() { must(fs.Fsync(dirfd("a/b"))) }},
		{"rename a -> c", func() { must(fs.Renameat2(root, "a", root, "c", 0)) }},
		{"fsync f after its directory moved", func() { must(fs.Fsync(opened["f"])) }},
		{"create in the moved directory", func() { create("a/b", "g", "g") }}, // dirfd of a/b is the moved directory
		{"link f to c/f2", func() { must(fs.Linkat(opened["dir:a/b"], "f", dirfd(""), "f2")) }},
		{"unlink the first name of f", func() { must(fs.Unlinkat(opened["dir:a/b"], "f", 0)) }},
		{"fsync f by its other name (none: the fd's name is gone)", func() { must(fs.Fsync(opened["f"])) }},
		{"rename g up", func() { must(fs.Renameat2(opened["dir:a/b"], "g", root, "g2", 0)) }},
		{"fsync g where it went", func() { must(fs.Fsync(opened["g"])) }},
		{"unlink g", func() { must(fs.Unlinkat(root, "g2", 0)) }},
		{"fsync g unlinked (none)", func() { must(fs.Fsync(opened["g"])) }},
		{"new files (inode numbers used again)", func() {
			for i := range 20 {
				create("", fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", i))
			}
		}},
		{"fsync the new files", func() {
			for i := range 20 {
				must(fs.Fsync(opened[fmt.Sprintf("n%d", i)]))
			}
		}},
		{"exchange n0 and c", func() { must(fs.Renameat2(root, "n0", root, "c", unix.RENAME_EXCHANGE)) }},
		{"fsync n0 and the directory", func() {
			must(fs.Fsync(opened["n0"]))
			must(fs.Fsync(opened["dir:a/b"]))
		}},
		{"rmdir and mkdir again", func() {
			must(fs.Mkdirat(root, "e", 0o700))
			e := dirfd("e")
			must(fs.Fsync(e))
			must(fs.Unlinkat(root, "e", unix.AT_REMOVEDIR))
			must(fs.Fsync(e))
			must(fs.Mkdirat(root, "e2", 0o700))
			e2, err := backing.OpenDir(root, "e2")
			must(err)
			opened["dir:e2"] = e2
			create("e2", "x", "x")
			must(fs.Fsync(opened["x"]))
		}},
	}
	for _, s := range steps {
		s.do()
		got, want := cached.takeTouched(), kernel.takeTouched()
		if !maps.EqualFunc(got, want, maps.Equal) {
			t.Fatalf("%s: the cached writer noted %v, the kernel's paths %v", s.what, got, want)
		}
		if len(want) == 0 != strings.Contains(s.what, "(none") {
			t.Fatalf("%s: noted %v", s.what, want)
		}
	}
}

// takeTouched returns and clears the names noted since the last batch.
func (v *Vault) takeTouched() map[string]map[string]bool {
	v.noted.mu.Lock()
	defer v.noted.mu.Unlock()
	t := v.noted.touched
	v.noted.touched = map[string]map[string]bool{}
	return t
}

// TestPathCacheDropsRacedPaths: a path learnt before a rename or an
// unlink that another goroutine noted meanwhile is not cached (it may
// name where the inode was), while a put between two lookups of the same
// generation is.
func TestPathCacheDropsRacedPaths(t *testing.T) {
	c := newPathCache()
	k := inoKey{1, 2}
	_, gen, _ := c.lookup(k)
	c.renamed("d", "e", false)
	c.putIf(gen, k, "d/f", false)
	if p, _, ok := c.lookup(k); ok {
		t.Fatalf("a path learnt before a rename was cached: %q", p)
	}
	_, gen, _ = c.lookup(k)
	c.forget("x")
	c.putIf(gen, k, "d/f", false)
	if _, _, ok := c.lookup(k); ok {
		t.Fatal("a path learnt before an unlink was cached")
	}
	_, gen, _ = c.lookup(k)
	c.putIf(gen, inoKey{1, 3}, "d", true) // a put does not make others stale
	c.putIf(gen, k, "d/f", false)
	if p, _, ok := c.lookup(k); !ok || p != "d/f" {
		t.Fatalf("lookup after put: %q %v", p, ok)
	}
}
