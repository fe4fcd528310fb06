package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/session"
)

// The dirCache (dircache.go): what this Vault changes is seen at once,
// what others change within the expiry, and no fd outlives Close.

// cacheVaults are a v1 and a location-bound (v2) vault, with their dirs.
func cacheVaults(t *testing.T) map[string]*Vault {
	t.Helper()
	v1, _ := newTestVault(t)
	v2, err := create(t.TempDir(), testPassword, cheap, session.Options{BoundVaultID: freshVaultID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v2.Close() })
	return map[string]*Vault{"v1": v1, "v2": v2}
}

func cacheWrite(t *testing.T, v *Vault, name, data string) {
	t.Helper()
	if err := v.MkdirAll(pathDir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func pathDir(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[:i]
	}
	return ""
}

func wantFile(t *testing.T, v *Vault, name, data string) {
	t.Helper()
	if got, err := v.ReadFile(name); err != nil || string(got) != data {
		t.Fatalf("%s: %q, %v; want %q", name, got, err, data)
	}
}

func wantNotExist(t *testing.T, v *Vault, name string) {
	t.Helper()
	if _, err := v.Stat(name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s: %v, want not-exist", name, err)
	}
}

// cached reports whether the cache keeps directory p.
func cached(v *Vault, p string) bool {
	v.dirs.mu.Lock()
	defer v.dirs.mu.Unlock()
	return v.dirs.dirs[p] != nil
}

// TestDirCacheRenameSeenAtOnce: a directory renamed or removed through
// the Vault, and another made at its name, is seen by the very next call,
// for the directory and everything cached beneath it.
func TestDirCacheRenameSeenAtOnce(t *testing.T) {
	for name, v := range cacheVaults(t) {
		t.Run(name, func(t *testing.T) {
			cacheWrite(t, v, "a/f", "in a")
			cacheWrite(t, v, "a/sub/g", "in a/sub")
			wantFile(t, v, "a/sub/g", "in a/sub")
			if !cached(v, "a") || !cached(v, "a/sub") {
				t.Fatal("a and a/sub are not cached: the test tests nothing")
			}
			if err := v.Rename("a", "b"); err != nil {
				t.Fatal(err)
			}
			cacheWrite(t, v, "a/sub/other", "new a")
			wantNotExist(t, v, "a/f")
			wantNotExist(t, v, "a/sub/g")
			wantFile(t, v, "b/f", "in a")
			wantFile(t, v, "b/sub/g", "in a/sub")
			wantFile(t, v, "a/sub/other", "new a")

			// A rename onto a directory (replacing it, empty) and a
			// removal.
			if err := v.Remove("a/sub/other"); err != nil {
				t.Fatal(err)
			}
			wantNotExist(t, v, "a/sub/other")
			if err := v.Rename("b/sub", "a/sub"); err != nil {
				t.Fatal(err)
			}
			wantFile(t, v, "a/sub/g", "in a/sub")
			wantNotExist(t, v, "b/sub/g")
			if err := v.Remove("a/sub/g"); err != nil {
				t.Fatal(err)
			}
			if err := v.Remove("a/sub"); err != nil {
				t.Fatal(err)
			}
			wantNotExist(t, v, "a/sub")
			if cached(v, "a/sub") {
				t.Fatal("a removed directory is still cached")
			}
		})
	}
}

// TestDirCacheBehindTheBack: a rename by someone else (a second Vault on
// the same CIPHERDIR, as a mount in another process would do it) is seen
// once the cache's entries expire; a directory removed behind the Vault's
// back is seen at once.
func TestDirCacheBehindTheBack(t *testing.T) {
	v, dir := newTestVault(t)
	now := time.Now()
	v.dirs.mu.Lock()
	v.dirs.now = func() time.Time { return now }
	v.dirs.mu.Unlock()
	cacheWrite(t, v, "a/f", "in a")
	wantFile(t, v, "a/f", "in a")
	if !cached(v, "a") {
		t.Fatal("a is not cached: the test tests nothing")
	}
	other := renameBehind(t, dir)
	now = now.Add(dirCacheTTL)
	wantNotExist(t, v, "a/f")
	wantFile(t, v, "a/g", "new a")
	wantFile(t, v, "b/f", "in a")

	// Removed and made again: the cached fd's directory has no link
	// left, and is passed over without waiting for the expiry.
	if !cached(v, "a") {
		t.Fatal("a is not cached")
	}
	for _, op := range []func() error{
		func() error { return other.Remove("a/g") },
		func() error { return other.Remove("a") },
		func() error { return other.Mkdir("a", 0o700) },
	} {
		if err := op(); err != nil {
			t.Fatal(err)
		}
	}
	wantNotExist(t, v, "a/g")
	cacheWrite(t, v, "a/h", "made again")
	wantFile(t, other, "a/h", "made again")
}

// fdsInside counts this process's fds open on dir or beneath it.
func fdsInside(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && (target == dir || strings.HasPrefix(target, dir+"/")) {
			n++
		}
	}
	return n
}

// TestDirCacheCloseClosesFDs: the cache holds the fds of the directories
// it keeps, and Close closes them; one held by a call in flight at Close
// is closed when that call gives it back, not before.
func TestDirCacheCloseClosesFDs(t *testing.T) {
	dir := t.TempDir()
	v, err := Create(dir, testPassword, cheap)
	if err != nil {
		t.Fatal(err)
	}
	cacheWrite(t, v, "a/b/c/f", "deep")
	wantFile(t, v, "a/b/c/f", "deep")
	if n := fdsInside(t, dir); n < 4 {
		t.Fatalf("%d fds open in CIPHERDIR, want the root's, a's, a/b's and a/b/c's at least", n)
	}
	held, err := v.openDir([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := v.openDir([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if again.e != held.e {
		t.Fatal("a/b was resolved twice: not from the cache")
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fdsInside(t, dir); n != 1 {
		t.Fatalf("%d fds open in CIPHERDIR after Close with one directory held, want 1", n)
	}
	held.Close()
	held.Close() // idempotent: must not give back again's hold
	if _, err := again.Stat(); err != nil {
		t.Fatalf("the held directory's fd was closed under it: %v", err)
	}
	again.Close()
	if n := fdsInside(t, dir); n != 0 {
		t.Fatalf("%d fds open in CIPHERDIR after the last release, want 0", n)
	}
	if _, err := v.Stat("a/b"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Stat after Close: %v, want ErrClosed", err)
	}
}

// TestDirCacheBounded: the cache keeps at most dirCacheMax directories
// (and fds), dropping the least recently used.
func TestDirCacheBounded(t *testing.T) {
	v, dir := newTestVault(t)
	for i := range dirCacheMax + 10 {
		cacheWrite(t, v, fmt.Sprintf("d%02d/f", i), "x")
	}
	wantFile(t, v, "d00/f", "x") // used last: kept
	for i := range dirCacheMax + 10 {
		wantFile(t, v, fmt.Sprintf("d%02d/f", i), "x")
		wantFile(t, v, "d00/f", "x")
	}
	v.dirs.mu.Lock()
	n := len(v.dirs.dirs)
	v.dirs.mu.Unlock()
	if n > dirCacheMax {
		t.Fatalf("%d directories cached, want at most %d", n, dirCacheMax)
	}
	if !cached(v, "d00") {
		t.Fatal("the most used directory was evicted")
	}
	// The engine's root, the cache's fds, nothing else.
	if fds := fdsInside(t, dir); fds > dirCacheMax+1 {
		t.Fatalf("%d fds open in CIPHERDIR, want at most %d", fds, dirCacheMax+1)
	}
}

// TestDirCacheNoFillAcrossInvalidation: a walk begun before a rename
// through the Vault (which invalidates) does not put what it resolved
// into the cache, where it could be found after the rename returned.
func TestDirCacheNoFillAcrossInvalidation(t *testing.T) {
	v, _ := newTestVault(t)
	cacheWrite(t, v, "a/f", "x")
	v.dirs.invalidate("")
	e, _, gen := v.dirs.deepest([]string{"a"})
	if e != nil {
		t.Fatal("the cache is not empty after an invalidation")
	}
	root, err := v.resolveRoot()
	if err != nil {
		t.Fatal(err)
	}
	sub, err := v.resolveSub(root, "a")
	if err != nil {
		t.Fatal(err)
	}
	v.dirs.invalidate("a")
	v.dirs.add("", root, gen)
	v.dirs.add("a", sub, gen)
	if cached(v, "") || cached(v, "a") {
		t.Fatal("a walk begun before an invalidation filled the cache")
	}
	v.dirs.release(root)
	v.dirs.release(sub)
	if root.fd != -1 || sub.fd != -1 {
		t.Fatal("the fds of the uncached walk were not closed at release")
	}
}

// TestDirCacheConcurrent: calls on many paths at once, with renames and
// removals among them, neither fail nor leak fds (run with -race).
func TestDirCacheConcurrent(t *testing.T) {
	dir := t.TempDir()
	v, err := Create(dir, testPassword, cheap)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		cacheWrite(t, v, fmt.Sprintf("s/%d/keep", i), "k")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := fmt.Sprintf("s/%d", g)
			for i := range 50 {
				if _, err := v.ReadFile(mine + "/keep"); err != nil {
					errs <- err
					return
				}
				tmp := fmt.Sprintf("t%d-%d", g, i)
				if err := v.Rename(mine, tmp); err != nil {
					errs <- err
					return
				}
				if err := v.Rename(tmp, mine); err != nil {
					errs <- err
					return
				}
				if _, err := v.ReadDir("s"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fdsInside(t, dir); n != 0 {
		t.Fatalf("%d fds open in CIPHERDIR after Close, want 0", n)
	}
}

// TestDirCacheSharedStorage: with SharedStorage nothing is kept, and a
// rename by someone else is seen at once, with no expiry to wait for.
func TestDirCacheSharedStorage(t *testing.T) {
	v, dir := newTestVault(t)
	v.SharedStorage()
	cacheWrite(t, v, "a/f", "in a")
	wantFile(t, v, "a/f", "in a")
	renameBehind(t, dir)
	wantNotExist(t, v, "a/f")
	wantFile(t, v, "a/g", "new a")
	wantFile(t, v, "b/f", "in a")
	if cached(v, "a") || cached(v, "b") {
		t.Fatal("a directory is kept with SharedStorage")
	}
}

// renameBehind opens a second Vault on dir (closed with the test), which
// renames directory a to b and writes a new a/g: a change behind the
// first Vault's back, as a mount in another process makes it.
func renameBehind(t *testing.T, dir string) *Vault {
	t.Helper()
	other, err := Open(dir, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if err := other.Rename("a", "b"); err != nil {
		t.Fatal(err)
	}
	cacheWrite(t, other, "a/g", "new a")
	return other
}
