package crashsim_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crashsim"
	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/vault"
)

// TestCrashReplay runs each workload with a recorder, then rebuilds the
// backing store as a crash before every recorded op could leave it, under
// the crash model of docs/format.md ("Crash consistency"; the package
// comment of crashsim): at each crash point the ops no barrier made
// durable are all lost, all kept, or a random subset kept. Each state must
// open, read back every synced file exactly, keep every entry its
// directory had at its last fsync, keep each renamed entry under one of
// its names, and show fsck only damage a crash may leave (data damage in
// files written since their last fsync; leftovers and lost directory IDs
// that fsck --repair fixes, after which fsck must find nothing else).
//
// ENCRYPTFS_CRASH_FULL=1 also tries, at every crash point, losing each
// pending op alone and keeping each alone, and more random subsets.
func TestCrashReplay(t *testing.T) {
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			h := newHarness(t, w.setup)
			w.run(h)
			h.replay()
		})
	}
}

type workload struct {
	name  string
	setup func(v *vault.Vault)
	run   func(h *harness)
}

func data(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// longName is a name whose encryption needs a long-name sidecar.
func longName(c string) string { return strings.Repeat(c, 200) }

func mustV(err error) {
	if err != nil {
		panic(err)
	}
}

var workloads = []workload{
	{name: "untar", run: func(h *harness) {
		h.mkdir("a")
		h.mkdir("a/b")
		h.writeFile("a/f1", data(1, 5000), true)
		h.writeFile("a/b/f2", data(2, 100), true)
		h.writeFile("a/"+longName("n"), data(3, 10), true)
		h.symlink("f1", "a/l")
		h.symlink(strings.Repeat("t/", 2000), "a/ll")
		h.mkdir("a/" + longName("d"))
		h.writeFile("a/unsynced", data(4, 9000), false)
		h.setxattr("a/f1", "user.mime", []byte("text/plain"), true)
		h.syncDir("a")
		h.remove("a/" + longName("n"))
		h.remove("a/b/f2")
		h.remove("a/b")
		h.remove("a/ll")
		h.syncDir("a")
	}},
	{name: "renames", setup: func(v *vault.Vault) {
		for _, d := range []string{"d1", "d2", "d3", "d4"} {
			mustV(v.Mkdir(d, 0o755))
		}
		mustV(v.WriteFile("d1/x", data(5, 3000), 0o644))
		mustV(v.WriteFile("d1/y", data(6, 100), 0o644))
		mustV(v.WriteFile("d4/z", data(7, 100), 0o644))
		mustV(v.WriteFile("d1/"+longName("m"), data(8, 100), 0o644))
		mustV(v.Symlink("t1", "d1/s1"))
		mustV(v.Symlink("t2", "d1/s2"))
		mustV(v.Symlink(strings.Repeat("u/", 2000), "d1/lt"))
	}, run: func(h *harness) {
		h.rename("d1/x", "d1/y")
		h.rename("d4", "d3")
		h.rename("d1/s1", "d1/s2")
		h.rename("d1/s2", "d2/s3")
		h.rename("d1/"+longName("m"), "d2/"+longName("k"))
		h.rename("d1/lt", "d2/lt")
		h.syncDir("d1")
		h.syncDir("d2")
		h.syncDir("")
		h.rename("d2", "d1/d2")
		h.syncDir("")
	}},
	{name: "data", setup: func(v *vault.Vault) {
		mustV(v.WriteFile("g", data(9, 3*4096+10), 0o644))
		mustV(v.WriteFile("h", data(10, 4*4096), 0o644))
	}, run: func(h *harness) {
		h.appendSync("g", data(11, 5000))
		h.truncate("g", 12*4096, true) // grows with holes: SPARSE set
		h.appendSync("g", data(12, 100))
		h.punch("h", 4096, 2*4096, true)                 // SPARSE set by the punch
		h.writeFileAt("h", 4096, data(13, 2*4096), true) // fills the holes: SPARSE cleared
		h.truncate("g", 2*4096+7, true)
		h.truncate("g", 0, false)
	}},
	{name: "xattrs", setup: func(v *vault.Vault) {
		mustV(v.WriteFile("x", data(14, 10), 0o644))
		mustV(v.Mkdir("dx", 0o755))
	}, run: func(h *harness) {
		h.setxattr("x", "user.a", []byte("1"), true)
		h.setxattr("x", "user.a", []byte("22"), false)
		h.setxattr("x", "user.b", []byte("3"), true)
		h.removexattr("x", "user.a", true)
		h.setxattr("dx", "user.c", []byte("4"), false)
	}},
	{name: "passwd", setup: func(v *vault.Vault) {
		mustV(v.WriteFile("p", data(15, 10), 0o644))
	}, run: func(h *harness) {
		h.passwd([]byte("new password"))
		h.passwd([]byte("newer password"))
	}},
}

// writeFileAt writes data at off into existing file p.
func (h *harness) writeFileAt(p string, off int64, b []byte, sync bool) {
	h.label(fmt.Sprintf("write %s %d+%d", p, off, len(b)))
	h.touchRange(p, off, off+int64(len(b)), off+int64(len(b)) > h.size(p))
	f, err := h.v.OpenFile(p, os.O_RDWR, 0)
	h.must(err)
	_, err = f.WriteAt(b, off)
	h.must(err)
	if sync {
		h.must(f.Sync())
		h.claimFile(p, h.rec.Len())
	}
	h.must(f.Close())
}

// stepStart is the first op of the workload step op k-1 belongs to.
func (h *harness) stepStart(k int) int {
	best := 0
	for at := range h.labels {
		if at < k && at > best {
			best = at
		}
	}
	return best
}

// where names the workload step op k-1 belongs to.
func (h *harness) where(k int) string {
	best, label := -1, "start"
	for at, l := range h.labels {
		if at < k && at > best {
			best, label = at, l
		}
	}
	return label
}

// replay checks every crash point of the recording.
func (h *harness) replay() (found, fixed map[fsck.Kind]int) {
	t := h.t
	if err := h.rec.Err(); err != nil {
		t.Fatal(err)
	}
	disk, err := crashsim.Snapshot(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := crashsim.Diff(h.rec.Live(), disk); d != "" {
		t.Fatalf("the recording does not account for the disk: %s", d)
	}
	if os.Getenv("ENCRYPTFS_CRASH_DUMP") != "" {
		h.dumpOps()
	}
	full := os.Getenv("ENCRYPTFS_CRASH_FULL") != ""
	rng := rand.New(rand.NewPCG(7, 8))
	scratch := t.TempDir()
	n := h.rec.Len()
	states, failures := 0, 0
	seen := map[string]bool{} // one report per step and kind of failure
	found = map[fsck.Kind]int{}
	fixed = map[fsck.Kind]int{}
	for k := 0; k <= n; k++ {
		pending := h.rec.Pending(k)
		sets := []func(int) bool{
			func(int) bool { return true },
			func(int) bool { return false },
		}
		randoms := 2
		// Losing one op of the step in progress alone is where a missing
		// barrier shows first; ENCRYPTFS_CRASH_FULL tries every pending op
		// alone, kept and lost.
		from := h.stepStart(k)
		for _, i := range pending {
			if full || i >= from {
				sets = append(sets, func(j int) bool { return j != i })
			}
			if full {
				sets = append(sets, func(j int) bool { return j == i })
			}
		}
		if full {
			randoms = 16
		}
		if len(pending) == 0 {
			sets, randoms = sets[:1], 0
		}
		for range randoms {
			keep := map[int]bool{}
			for _, i := range pending {
				keep[i] = rng.IntN(2) == 0
			}
			sets = append(sets, func(i int) bool { return keep[i] })
		}
		for _, keep := range sets {
			states++
			res, err := h.checkState(k, keep, scratch)
			if res != nil {
				for _, p := range res.problems {
					found[p.Kind]++
				}
				for _, f := range res.fixes {
					fixed[f.Kind]++
				}
			}
			if err != nil {
				var kept []int
				for _, i := range pending {
					if keep(i) {
						kept = append(kept, i)
					}
				}
				failures++
				msg := err.Error()
				key := h.where(k) + " " + msg[:min(len(msg), 40)]
				if !seen[key] {
					seen[key] = true
					t.Errorf("crash at %d/%d (in %q), pending %v, kept %v: %v", k, n, h.where(k), pending, kept, err)
				}
			}
		}
	}
	t.Logf("%d ops, %d crash states checked, %d failed; fsck found %v, repair fixed %v", n, states, failures, found, fixed)
	return found, fixed
}

// dumpOps logs the recording (ENCRYPTFS_CRASH_DUMP=1), step by step.
func (h *harness) dumpOps() {
	for i, op := range h.rec.Ops() {
		if l, ok := h.labels[i]; ok {
			h.t.Logf("-- %s", l)
		}
		h.t.Logf("%3d %s", i, op)
	}
}
