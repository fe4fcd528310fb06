package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/internal/fstest"
)

// The tests of docs/shared-storage.md: one CIPHERDIR mounted twice with
// --shared-storage by two daemons, as two machines on a network file
// system would mount it. Every check reads through the other mount than
// the one that wrote.

// sharedChunk is the chunk size of the shared vault (init --chunk-size),
// so that a block of the test patterns is exactly one chunk.
const sharedChunk = 4096

// block returns chunk number idx of the version tagged tag: 4096 bytes
// that say which tag and index they belong to in every 32-byte word, so
// that a chunk mixing two writes is recognised.
func block(tag string, idx int) []byte {
	seed := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", tag, idx)))
	b := make([]byte, 0, sharedChunk)
	for len(b) < sharedChunk {
		b = append(b, seed[:]...)
	}
	return b
}

// whichBlock tells which of tags wrote chunk idx as b ("" if none did).
func whichBlock(b []byte, idx int, tags []string) string {
	for _, tag := range tags {
		if bytes.Equal(b, block(tag, idx)) {
			return tag
		}
	}
	return ""
}

// fileContent is a file of n bytes made of the blocks of tag.
func fileContent(tag string, n int) []byte {
	out := make([]byte, 0, n+sharedChunk)
	for i := 0; len(out) < n; i++ {
		out = append(out, block(tag, i)...)
	}
	return out[:n]
}

// sizes are the file sizes the tests cycle through: empty, one byte,
// around the chunk size, several chunks.
var sizes = []int{0, 1, sharedChunk - 1, sharedChunk, sharedChunk + 1, 3*sharedChunk + 17, 40_000, 100_000}

// mountShared inits a vault (4 KiB chunks) and mounts it twice with
// --shared-storage. It returns CIPHERDIR, the passfile and both mount
// points; both are unmounted when the test ends.
func mountShared(t *testing.T) (dir, pf, a, b string) {
	t.Helper()
	fstest.RequireFUSE(t)
	dir, _ = newVault(t, "pw", "--chunk-size", "4k")
	pf = writePassfile(t, "pw")
	a, b = t.TempDir(), t.TempDir()
	for _, mnt := range []string{a, b} {
		cleanupMount(t, mnt)
		run(t, "", "mount", "--shared-storage", "--passfile", pf, dir, mnt).want(t, 0)
	}
	return dir, pf, a, b
}

// fsckClean runs encryptfs fsck on dir and fails the test unless the vault
// is clean.
func fsckClean(t *testing.T, pf, dir string) {
	t.Helper()
	r := run(t, "", "fsck", "--passfile", pf, dir)
	if r.code != 0 {
		t.Fatalf("fsck: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestSharedStorageTwoMounts runs concurrent writers on two mounts of one
// CIPHERDIR and checks every byte through the other mount, then fsck.
func TestSharedStorageTwoMounts(t *testing.T) {
	dir, pf, a, b := mountShared(t)
	sides := []struct{ name, mnt, other string }{{"a", a, b}, {"b", b, a}}

	t.Run("different files in one directory", func(t *testing.T) {
		must(t, os.Mkdir(filepath.Join(a, "common"), 0o755))
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for _, s := range sides {
			wg.Go(func() {
				for i := range 40 {
					name := fmt.Sprintf("%s-%02d", s.name, i)
					data := fileContent(name, sizes[i%len(sizes)])
					if err := os.WriteFile(filepath.Join(s.mnt, "common", name), data, 0o644); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, s := range sides {
			ents, err := os.ReadDir(filepath.Join(s.mnt, "common"))
			must(t, err)
			if len(ents) != 80 {
				t.Fatalf("%s sees %d entries in common/, want 80", s.name, len(ents))
			}
			for _, e := range ents {
				var i int
				var side string
				if _, err := fmt.Sscanf(strings.Replace(e.Name(), "-", " ", 1), "%s %d", &side, &i); err != nil {
					t.Fatalf("%s: unexpected name %q", s.name, e.Name())
				}
				got, err := os.ReadFile(filepath.Join(s.mnt, "common", e.Name()))
				if err != nil || !bytes.Equal(got, fileContent(e.Name(), sizes[i%len(sizes)])) {
					t.Fatalf("%s reads %s: %d bytes, %v; want the writer's %d bytes", s.name, e.Name(), len(got), err, sizes[i%len(sizes)])
				}
			}
		}
		// Deletes: each side removes its even files; the other side no
		// longer sees them, and still reads the rest.
		for _, s := range sides {
			for i := 0; i < 40; i += 2 {
				must(t, os.Remove(filepath.Join(s.mnt, "common", fmt.Sprintf("%s-%02d", s.name, i))))
			}
		}
		for _, s := range sides {
			ents, err := os.ReadDir(filepath.Join(s.mnt, "common"))
			must(t, err)
			if len(ents) != 40 {
				t.Fatalf("%s sees %d entries in common/ after the deletes, want 40", s.name, len(ents))
			}
			for _, o := range sides {
				if _, err := os.Stat(filepath.Join(s.mnt, "common", o.name+"-00")); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s: stat of %s-00 deleted by %s: %v", s.name, o.name, o.name, err)
				}
			}
		}
	})

	t.Run("renames across directories", func(t *testing.T) {
		for _, d := range []string{"x", "y"} {
			must(t, os.Mkdir(filepath.Join(a, d), 0o755))
		}
		// a's files start in x, b's in y; each side moves its own to the
		// other directory while the other side does the same, and each
		// moves a directory with a file in it as well.
		for _, s := range sides {
			from := map[string]string{"a": "x", "b": "y"}[s.name]
			for i := range 25 {
				name := fmt.Sprintf("%s-%02d", s.name, i)
				must(t, os.WriteFile(filepath.Join(s.mnt, from, name), fileContent(name, sizes[i%len(sizes)]), 0o644))
			}
			must(t, os.MkdirAll(filepath.Join(s.mnt, from, s.name+"-dir", "sub"), 0o755))
			must(t, os.WriteFile(filepath.Join(s.mnt, from, s.name+"-dir", "sub", "f"), fileContent(s.name+"-dir", 5000), 0o644))
		}
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for _, s := range sides {
			from, to := map[string]string{"a": "x", "b": "y"}[s.name], map[string]string{"a": "y", "b": "x"}[s.name]
			wg.Go(func() {
				for i := range 25 {
					name := fmt.Sprintf("%s-%02d", s.name, i)
					if err := os.Rename(filepath.Join(s.mnt, from, name), filepath.Join(s.mnt, to, name)); err != nil {
						errs <- err
						return
					}
				}
				if err := os.Rename(filepath.Join(s.mnt, from, s.name+"-dir"), filepath.Join(s.mnt, to, s.name+"-dir")); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, s := range sides {
			for d, owner := range map[string]string{"x": "b", "y": "a"} {
				ents, err := os.ReadDir(filepath.Join(s.mnt, d))
				must(t, err)
				if len(ents) != 26 {
					t.Fatalf("%s sees %d entries in %s, want 26", s.name, len(ents), d)
				}
				for i := range 25 {
					name := fmt.Sprintf("%s-%02d", owner, i)
					got, err := os.ReadFile(filepath.Join(s.mnt, d, name))
					if err != nil || !bytes.Equal(got, fileContent(name, sizes[i%len(sizes)])) {
						t.Fatalf("%s reads %s/%s after the rename: %d bytes, %v", s.name, d, name, len(got), err)
					}
				}
				got, err := os.ReadFile(filepath.Join(s.mnt, d, owner+"-dir", "sub", "f"))
				if err != nil || !bytes.Equal(got, fileContent(owner+"-dir", 5000)) {
					t.Fatalf("%s reads %s/%s-dir/sub/f after the directory's rename: %v", s.name, d, owner, err)
				}
			}
		}
	})

	t.Run("open while open", func(t *testing.T) {
		// The reader's mount still has the file open from before the
		// other side's write (as it does for a moment after every close:
		// FUSE's RELEASE comes after close(2) returns); a new open must
		// still see what the other side closed, not the size and header
		// its own open File remembers.
		must(t, os.WriteFile(filepath.Join(a, "held"), fileContent("held-0", 3*sharedChunk-1), 0o644))
		for round, n := range []int{5*sharedChunk + 9, 100, 0, 2 * sharedChunk, 40_000} {
			w, r := sides[(round+1)%2], sides[round%2]
			tag := fmt.Sprintf("held-%d", round+1)
			held, err := os.Open(filepath.Join(r.mnt, "held"))
			must(t, err)
			must(t, os.WriteFile(filepath.Join(w.mnt, "held"), fileContent(tag, n), 0o644))
			got, err := os.ReadFile(filepath.Join(r.mnt, "held"))
			held.Close()
			if err != nil || !bytes.Equal(got, fileContent(tag, n)) {
				t.Fatalf("round %d: %s (holding the file open) reads %d bytes, %v; %s wrote and closed %d", round, r.name, len(got), err, w.name, n)
			}
		}
	})

	t.Run("close-to-open", func(t *testing.T) {
		// One writer, one reader, taking turns: whatever the reader opens
		// after the writer closed is exactly what was written, at every
		// size, over old contents longer and shorter.
		for round := range 40 {
			w, r := sides[round%2], sides[(round+1)%2]
			tag := fmt.Sprintf("cto-%d", round)
			n := sizes[(round*3)%len(sizes)]
			must(t, os.WriteFile(filepath.Join(w.mnt, "cto"), fileContent(tag, n), 0o644))
			got, err := os.ReadFile(filepath.Join(r.mnt, "cto"))
			if err != nil || !bytes.Equal(got, fileContent(tag, n)) {
				t.Fatalf("round %d: %s reads %d bytes, %v; %s wrote and closed %d", round, r.name, len(got), err, w.name, n)
			}
		}
		// Reads while the other side rewrites: each may fail with EIO or
		// see a file between versions, but every chunk it returns is one
		// whole chunk of one version, never an authenticated mix.
		var tags []string
		for v := range 150 {
			tags = append(tags, fmt.Sprintf("live-%d", v))
		}
		must(t, os.WriteFile(filepath.Join(a, "live"), fileContent(tags[0], 8*sharedChunk), 0o644))
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			defer close(done)
			for _, tag := range tags[1:] {
				if err := os.WriteFile(filepath.Join(a, "live"), fileContent(tag, 8*sharedChunk), 0o644); err != nil {
					t.Errorf("rewrite: %v", err)
					return
				}
			}
		})
		reads, failed := 0, 0
		for stop := false; !stop && reads < 10_000; reads++ {
			select {
			case <-done:
				stop = true
			default:
			}
			got, err := os.ReadFile(filepath.Join(b, "live"))
			if err != nil {
				if !errors.Is(err, syscall.EIO) && !errors.Is(err, syscall.ENOENT) {
					t.Fatalf("read during rewrites: %v", err)
				}
				failed++
				continue
			}
			for i := 0; i+sharedChunk <= len(got); i += sharedChunk {
				if whichBlock(got[i:i+sharedChunk], i/sharedChunk, tags) == "" {
					t.Fatalf("read %d: chunk %d is no chunk of any version", reads, i/sharedChunk)
				}
			}
		}
		wg.Wait()
		t.Logf("%d reads during 149 rewrites, %d failed (EIO or ENOENT)", reads, failed)
		got, err := os.ReadFile(filepath.Join(b, "live"))
		if err != nil || !bytes.Equal(got, fileContent(tags[len(tags)-1], 8*sharedChunk)) {
			t.Fatalf("after the rewrites: %d bytes, %v; want the last version", len(got), err)
		}
	})

	t.Run("same file written on both sides", func(t *testing.T) {
		// Both sides overwrite whole chunks of one 16-chunk file at once;
		// readers on both sides watch. Every chunk read is one side's
		// write of that chunk (or EIO): never a chunk that authenticates
		// but mixes two writes.
		const chunks = 16
		p := "both"
		var tags []string
		for _, s := range sides {
			for it := range 400 {
				tags = append(tags, fmt.Sprintf("%s-%d", s.name, it))
			}
		}
		tags = append(tags, "initial")
		must(t, os.WriteFile(filepath.Join(a, p), fileContent("initial", chunks*sharedChunk), 0o644))
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var writers sync.WaitGroup
		for si, s := range sides {
			writers.Go(func() {
				f, err := os.OpenFile(filepath.Join(s.mnt, p), os.O_WRONLY, 0)
				if err != nil {
					t.Errorf("%s: %v", s.name, err)
					return
				}
				defer f.Close()
				rng := rand.New(rand.NewPCG(uint64(si), 1))
				for it := range 400 {
					idx := rng.IntN(chunks)
					if _, err := f.WriteAt(block(fmt.Sprintf("%s-%d", s.name, it), idx), int64(idx*sharedChunk)); err != nil {
						t.Errorf("%s writes chunk %d: %v", s.name, idx, err)
						return
					}
				}
			})
			wg.Go(func() {
				buf := make([]byte, sharedChunk)
				for n := 0; n < 20_000; n++ {
					select {
					case <-stop:
						return
					default:
					}
					f, err := os.Open(filepath.Join(s.other, p))
					if err != nil {
						t.Errorf("open: %v", err)
						return
					}
					idx := n % chunks
					_, err = f.ReadAt(buf, int64(idx*sharedChunk))
					f.Close()
					if err != nil {
						if !errors.Is(err, syscall.EIO) {
							t.Errorf("read chunk %d: %v", idx, err)
						}
						continue
					}
					if whichBlock(buf, idx, tags) == "" {
						t.Errorf("chunk %d read during the writes is no one write's chunk", idx)
						return
					}
				}
			})
		}
		writers.Wait()
		close(stop)
		wg.Wait()
		if t.Failed() {
			return
		}
		// Afterwards both sides read the same file, chunk by chunk some
		// side's last write of that chunk.
		var views [2][]byte
		for i, s := range sides {
			got, err := os.ReadFile(filepath.Join(s.mnt, p))
			if err != nil || len(got) != chunks*sharedChunk {
				t.Fatalf("%s reads %d bytes, %v", s.name, len(got), err)
			}
			views[i] = got
			for idx := range chunks {
				if whichBlock(got[idx*sharedChunk:(idx+1)*sharedChunk], idx, tags) == "" {
					t.Fatalf("%s: chunk %d is no one write's chunk", s.name, idx)
				}
			}
		}
		if !bytes.Equal(views[0], views[1]) {
			t.Fatal("the two mounts read different contents after both closed")
		}
	})

	t.Run("same new file created on both sides", func(t *testing.T) {
		// Both sides create and write the same new names at once, with
		// contents of different lengths. Each file reads back as one
		// side's whole contents, or fails with EIO (one side's header
		// with the other's chunks), or, where one side's create found
		// the other's file and truncated it (O_TRUNC keeps the file and
		// its ID), as the two sides' writes interleaved at their offsets,
		// as two writers of one file on a local file system: a side's
		// write into a chunk the other wrote keeps the other's bytes
		// beside it. Never a byte neither side wrote there. fsck reports
		// exactly the files that fail, and no other.
		must(t, os.Mkdir(filepath.Join(a, "new"), 0o755))
		const files = 20
		length := map[string]int{"a": 3*sharedChunk + 5, "b": 5 * sharedChunk}
		var wg sync.WaitGroup
		for _, s := range sides {
			wg.Go(func() {
				for i := range files {
					tag := fmt.Sprintf("new-%s-%d", s.name, i)
					// Either side may find the name taken: that is fine.
					os.WriteFile(filepath.Join(s.mnt, "new", fmt.Sprint(i)), fileContent(tag, length[s.name]), 0o644)
				}
			})
		}
		wg.Wait()
		failed := map[string]bool{}
		for i := range files {
			for _, s := range sides {
				p := filepath.Join(s.mnt, "new", fmt.Sprint(i))
				got, err := os.ReadFile(p)
				if err != nil {
					if !errors.Is(err, syscall.EIO) {
						t.Fatalf("%s reads new/%d: %v", s.name, i, err)
					}
					failed["/new/"+fmt.Sprint(i)] = true
					continue
				}
				ca, cb := fileContent(fmt.Sprintf("new-a-%d", i), length["a"]), fileContent(fmt.Sprintf("new-b-%d", i), length["b"])
				if !bytes.Equal(got, ca) && !bytes.Equal(got, cb) && !interleaved(got, ca, cb) {
					t.Fatalf("%s reads new/%d: %d bytes that are neither side's contents nor an interleaving of their writes", s.name, i, len(got))
				}
			}
		}
		r := run(t, "", "fsck", "--json", "--passfile", pf, dir)
		var rep fsck.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("fsck --json: %v\n%s", err, r.stdout)
		}
		reported := map[string]bool{}
		for _, p := range rep.Problems {
			reported[p.PlainPath] = true
		}
		if !maps.Equal(reported, failed) {
			t.Fatalf("fsck reports %v, the mounts failed to read %v", reported, failed)
		}
		t.Logf("%d of %d files written on both sides at once read as EIO (and fsck reports them)", len(failed), files)
		must(t, os.RemoveAll(filepath.Join(a, "new")))
	})

	for _, mnt := range []string{a, b} {
		run(t, "", "unmount", mnt).want(t, 0)
	}
	fsckClean(t, pf, dir)
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// interleaved reports whether got is the result of two writers writing a
// and b at the same offsets of one file in some order: as long as one of
// them, and each byte a's or b's byte at that offset. (The test found, at
// 092f6f8 too, a's 5-byte last write into the chunk b had written whole:
// a's bytes, then b's, in one authentic chunk.)
func interleaved(got, a, b []byte) bool {
	if len(got) != len(a) && len(got) != len(b) {
		return false
	}
	for k, c := range got {
		if !(k < len(a) && a[k] == c) && !(k < len(b) && b[k] == c) {
			return false
		}
	}
	return true
}
