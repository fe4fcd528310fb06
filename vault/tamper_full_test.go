package vault

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/sys/unix"
)

// The tamper suite's v2 half (issue 7): every attack TestTamperV1 runs on a
// v1 vault, run again on a vault with every format-2 feature (location
// binding §14, file roots §16, freshness §15), each asserting that the
// attack is detected. Which feature catches which attack:
//
//   - reads fail (ErrCorrupt, EIO through the mount): location binding for
//     moved, swapped and copied objects; file roots for spliced, truncated
//     and zeroed contents; the chunk AEAD (as in v1) for chunks moved
//     within a file or from another file;
//   - freshness status reports it (encryptfs freshness status, exit 27/28):
//     deletion and rollback of files, directories and xattrs, which no
//     read can notice (an older state is a valid state).
//
// TestTamperSuitesMatch keeps the two halves in step: an attack added to
// TestTamperV1 fails it until it has its v2 run here.

// fullV2 is a vault with every format-2 content feature on, written by one
// device whose local freshness state is in state.
type fullV2 struct {
	v            *Vault
	dir, state   string
	closedWriter bool
}

func newFullV2(t *testing.T) *fullV2 {
	t.Helper()
	tmp := t.TempDir()
	f := &fullV2{dir: filepath.Join(tmp, "cipher"), state: filepath.Join(tmp, "state")}
	if err := os.Mkdir(f.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	o := freshOptions(f.state, false)
	o.FileRoots = true
	v, err := create(f.dir, testPassword, cheap, o)
	if err != nil {
		t.Fatal(err)
	}
	f.v = v
	t.Cleanup(func() {
		if !f.closedWriter {
			f.v.Close()
		}
	})
	return f
}

// reopen closes the writer (its freshness batch is flushed) and opens the
// vault again as the same device, with roots on.
func (f *fullV2) reopen(t *testing.T) {
	t.Helper()
	mustClose(t, f.v)
	o := freshOptions(f.state, false)
	o.FileRoots = true
	v, err := openWith(f.dir, o)
	if err != nil {
		t.Fatal(err)
	}
	f.v = v
}

// status closes the writer and runs freshness status as the same device
// twice: now, and a day and more later. What a sync in flight could still
// explain is "behind" when first seen and rolled back once it outlasts
// the grace period (format.md §15); an authentic counter that went back is
// rolled back at once.
func (f *fullV2) status(t *testing.T) *fresh.Report {
	t.Helper()
	if !f.closedWriter {
		mustClose(t, f.v)
		f.closedWriter = true
	}
	now := time.Now()
	if rep := f.check(t, now); rep.Status == fresh.OK {
		t.Fatalf("freshness status OK right after the attack:\n%s", rep)
	}
	return f.check(t, now.Add(fresh.DefaultGrace+time.Hour))
}

// check is encryptfs freshness status at time now, with the vault's
// features (a session's Params are the config's: roots on).
func (f *fullV2) check(t *testing.T, now time.Time) *fresh.Report {
	t.Helper()
	o := freshOptionsAt(f.state, true, now)
	o.FileRoots = true
	s, err := session.Open(f.dir, testPassword, o)
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

// openWith opens dir with testPassword and session options o.
func openWith(dir string, o session.Options) (*Vault, error) {
	s, err := session.Open(dir, testPassword, o)
	if err != nil {
		return nil, err
	}
	return fromSession(s, nil)
}

// wantReported fails unless rep is rolled back with an issue on a path
// with prefix path.
func wantReported(t *testing.T, rep *fresh.Report, path string) {
	t.Helper()
	if rep.Status != fresh.RolledBack {
		t.Fatalf("freshness status %v, want rolled back:\n%s", rep.Status, rep)
	}
	for _, i := range rep.Issues {
		if strings.HasPrefix(i.Path, path) {
			return
		}
	}
	t.Fatalf("no issue on %q:\n%s", path, rep)
}

func wantCorrupt(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: %v, want ErrCorrupt (EIO)", what, err)
	}
}

// spliceChunk copies stored chunk i and its tag-block entry from src over
// dst (both the backing bytes of one roots file): the strongest splice the
// storage can make, since the entry is what a read compares the chunk with.
func spliceChunk(t *testing.T, v *Vault, dst, src []byte, i int) {
	t.Helper()
	s := v.sess.Engine().Suite()
	if !s.Roots() {
		t.Fatal("not a roots vault")
	}
	off, n := s.ChunkOffset(uint64(i)), int64(s.CipherChunkSize())
	copy(dst[off:off+n], src[off:off+n])
	e := s.EntryOffset(uint64(i))
	copy(dst[e:e+16], src[e:e+16])
}

// tamperV2Attacks are the v2 runs, by the name of the v1 attack they
// repeat (plus v2-only ones).
var tamperV2Attacks = map[string]func(t *testing.T){
	"dirid-copy": func(t *testing.T) {
		f := newFullV2(t)
		v := f.v
		for _, d := range []string{"A", "B"} {
			if err := v.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		mustWrite(t, v, "A/secret", "in A")
		a, b := backingPath(t, v, f.dir, "A"), backingPath(t, v, f.dir, "B")
		entry := backingPath(t, v, f.dir, "A/secret")
		replaceFile(t, filepath.Join(b, names.DirIDFile), readFile(t, filepath.Join(a, names.DirIDFile)))
		if err := os.Rename(entry, filepath.Join(b, filepath.Base(entry))); err != nil {
			t.Fatal(err)
		}
		_, err := v.ReadFile("B/secret")
		wantMisplaced(t, "B with A's ID", err)
	},
	"chunk-splice-two-versions": func(t *testing.T) {
		f := newFullV2(t)
		v := f.v
		cs := v.ChunkSize()
		mustWrite(t, v, "f", strings.Repeat("a", 3*cs))
		p := backingPath(t, v, f.dir, "f")
		old := readFile(t, p)
		fh, err := v.OpenFile("f", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteAt(bytes.Repeat([]byte{'b'}, 2*cs), 0); err != nil {
			t.Fatal(err)
		}
		if err := fh.Close(); err != nil {
			t.Fatal(err)
		}
		cur := readFile(t, p)
		spliceChunk(t, v, cur, old, 1)
		replaceFile(t, p, cur)
		_, err = v.ReadFile("f")
		wantCorrupt(t, "chunk 1 and its entry from the older version", err)
	},
	"header-only-truncation": func(t *testing.T) {
		f := newFullV2(t)
		mustWrite(t, f.v, "f", strings.Repeat("x", 10000))
		p := backingPath(t, f.v, f.dir, "f")
		if err := os.Truncate(p, int64(f.v.sess.Engine().Suite().HeaderSize())); err != nil {
			t.Fatal(err)
		}
		_, err := f.v.ReadFile("f")
		wantCorrupt(t, "a file cut to its header", err)
	},
	"zero-chunk-in-sparse-file": func(t *testing.T) {
		// v1 (SPARSE) reads any non-final chunk of a file with a hole
		// as zeros when the storage zeroes it; v2 has no SPARSE: a hole
		// is a zero entry under the root.
		f := newFullV2(t)
		v := f.v
		cs := v.ChunkSize()
		fh, err := v.Create("f")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteAt(bytes.Repeat([]byte{'x'}, cs), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteAt([]byte("end"), int64(3*cs)); err != nil { // chunks 1, 2: holes
			t.Fatal(err)
		}
		if err := fh.Close(); err != nil {
			t.Fatal(err)
		}
		p := backingPath(t, v, f.dir, "f")
		cur := readFile(t, p)
		s := v.sess.Engine().Suite()
		off, n := s.ChunkOffset(0), int64(s.CipherChunkSize())
		clear(cur[off : off+n])
		e := s.EntryOffset(0)
		clear(cur[e : e+16])
		replaceFile(t, p, cur)
		_, err = v.ReadFile("f")
		wantCorrupt(t, "chunk 0 and its entry zeroed (made a hole)", err)
	},
	"xattr-deletion": func(t *testing.T) {
		f := newFullV2(t)
		mustWrite(t, f.v, "f", "data")
		if err := f.v.SetXattr("f", "user.tag", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		p := backingPath(t, f.v, f.dir, "f")
		rep := f.statusAfter(t, func() {
			if err := unix.Removexattr(p, onlyBackingXattr(t, p)); err != nil {
				t.Fatal(err)
			}
		})
		wantReported(t, rep, "/f")
	},
	"xattr-rollback": func(t *testing.T) {
		f := newFullV2(t)
		mustWrite(t, f.v, "f", "data")
		if err := f.v.SetXattr("f", "user.tag", []byte("old")); err != nil {
			t.Fatal(err)
		}
		p := backingPath(t, f.v, f.dir, "f")
		name := onlyBackingXattr(t, p)
		f.reopen(t) // the old value is recorded
		oldVal := getBackingXattr(t, p, name)
		if err := f.v.SetXattr("f", "user.tag", []byte("new")); err != nil {
			t.Fatal(err)
		}
		rep := f.statusAfter(t, func() {
			if err := unix.Setxattr(p, name, oldVal, 0); err != nil {
				t.Fatal(err)
			}
		})
		wantReported(t, rep, "/f")
	},
	"whole-file-rollback": func(t *testing.T) {
		f := newFullV2(t)
		mustWrite(t, f.v, "f", "version 1")
		p := backingPath(t, f.v, f.dir, "f")
		f.reopen(t)
		old := readFile(t, p)
		mustWrite(t, f.v, "f", "version 2, longer")
		rep := f.statusAfter(t, func() { replaceFile(t, p, old) })
		wantReported(t, rep, "/f")
	},
	"file-deletion": func(t *testing.T) {
		f := newFullV2(t)
		mustWrite(t, f.v, "keep", "keep")
		mustWrite(t, f.v, "gone", "gone")
		p := backingPath(t, f.v, f.dir, "gone")
		rep := f.statusAfter(t, func() {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		})
		wantReported(t, rep, "/gone")
	},
	"directory-rollback": func(t *testing.T) {
		f := newFullV2(t)
		if err := f.v.Mkdir("d", 0o700); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, f.v, "d/old", "old")
		bd := backingPath(t, f.v, f.dir, "d")
		f.reopen(t)
		snap := filepath.Join(t.TempDir(), "snap")
		if out, err := exec.Command("cp", "-a", bd, snap).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
		if err := f.v.Remove("d/old"); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, f.v, "d/new", "new")
		rep := f.statusAfter(t, func() {
			if err := os.RemoveAll(bd); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("cp", "-a", snap, bd).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v: %s", err, out)
			}
		})
		wantReported(t, rep, "/d/")
	},
	"file-swap-in-directory": func(t *testing.T) {
		f := newFullV2(t)
		mustWrite(t, f.v, "a", "contents of a")
		mustWrite(t, f.v, "b", "contents of b")
		pa, pb := backingPath(t, f.v, f.dir, "a"), backingPath(t, f.v, f.dir, "b")
		if err := unix.Renameat2(unix.AT_FDCWD, pa, unix.AT_FDCWD, pb, unix.RENAME_EXCHANGE); err != nil {
			t.Fatal(err)
		}
		_, err := f.v.ReadFile("a")
		wantMisplaced(t, "a's name with b's contents", err)
	},
	"chunk-swap-within-file": func(t *testing.T) {
		f := newFullV2(t)
		v := f.v
		cs := v.ChunkSize()
		mustWrite(t, v, "f", strings.Repeat("0", cs)+strings.Repeat("1", cs)+"z")
		p := backingPath(t, v, f.dir, "f")
		orig := readFile(t, p)
		cur := bytes.Clone(orig)
		s := v.sess.Engine().Suite()
		o0, o1, n := s.ChunkOffset(0), s.ChunkOffset(1), int64(s.CipherChunkSize())
		copy(cur[o0:o0+n], orig[o1:o1+n])
		copy(cur[o1:o1+n], orig[o0:o0+n])
		replaceFile(t, p, cur)
		_, err := v.ReadFile("f")
		wantCorrupt(t, "chunks 0 and 1 swapped", err)
	},
	"chunk-from-other-file": func(t *testing.T) {
		f := newFullV2(t)
		v := f.v
		cs := v.ChunkSize()
		mustWrite(t, v, "p", strings.Repeat("p", 2*cs))
		mustWrite(t, v, "q", strings.Repeat("q", 2*cs))
		pq := backingPath(t, v, f.dir, "q")
		cur := readFile(t, pq)
		spliceChunk(t, v, cur, readFile(t, backingPath(t, v, f.dir, "p")), 0)
		replaceFile(t, pq, cur)
		_, err := v.ReadFile("q")
		wantCorrupt(t, "chunk 0 of p in q", err)
	},
}

// statusAfter closes the writer (flushing its records), runs attack on
// CIPHERDIR, then freshness status.
func (f *fullV2) statusAfter(t *testing.T, attack func()) *fresh.Report {
	t.Helper()
	mustClose(t, f.v)
	f.closedWriter = true
	attack()
	return f.status(t)
}

// TestTamperV2Full runs the tamper suite on a full-v2 vault.
func TestTamperV2Full(t *testing.T) {
	for name, attack := range tamperV2Attacks {
		t.Run(name, attack)
	}
}

// TestTamperSuitesMatch: every attack TestTamperV1 documents has its v2
// run in tamperV2Attacks (read from the test's source, so that adding a
// v1 attack without its v2 half fails here).
func TestTamperSuitesMatch(t *testing.T) {
	src, err := os.ReadFile("tamper_v1_test.go")
	if err != nil {
		t.Fatal(err)
	}
	runs := regexp.MustCompile(`t\.Run\("([^"]+)"`).FindAllSubmatch(src, -1)
	if len(runs) < 10 {
		t.Fatalf("found %d attacks in TestTamperV1; the pattern no longer matches", len(runs))
	}
	for _, m := range runs {
		if _, ok := tamperV2Attacks[string(m[1])]; !ok {
			t.Errorf("v1 attack %q has no v2 run in tamperV2Attacks", m[1])
		}
	}
}
