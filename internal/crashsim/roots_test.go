package crashsim_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/sys/unix"
)

// TestCrashReplayRoots is TestCrashReplay for file contents in a vault
// with file roots (format v2, docs/design/format-v2.md §5): every crash
// state must read every fsynced file back (its clean header and root
// verify it as a whole); a file written and not fsynced may be DIRTY
// (fsck's dirty-root, its chunks read with v1's guarantees) or, after a
// power loss (a pending change lost), fail as a whole (bad-root), besides
// the damage v1 allows there; a process crash (every pending change kept)
// leaves no bad-root; and fsck --repair must re-root every such file
// whose chunks authenticate, so that it reads with each chunk old or new.
func TestCrashReplayRoots(t *testing.T) {
	for _, w := range rootsWorkloads {
		t.Run(w.name, func(t *testing.T) {
			h := newHarnessWith(t, bytes.Repeat([]byte{0x3d}, 16), true, w.setup)
			w.run(h)
			found, fixed := h.replay()
			for _, k := range []fsck.Kind{fsck.KindDirtyRoot, fsck.KindBadRoot} {
				if found[k] == 0 || fixed[k] == 0 {
					t.Errorf("no crash state had a %s file repaired (found %d, fixed %d): the workload does not test the crash rule",
						k, found[k], fixed[k])
				}
			}
		})
	}
}

const rootsChunk = 4096 // cheap.ChunkSize

var rootsWorkloads = []workload{
	{name: "data", setup: func(v *vault.Vault) {
		mustV(v.WriteFile("g", data(30, 3*rootsChunk+10), 0o644))
		mustV(v.WriteFile("h", data(31, 4*rootsChunk), 0o644))
		mustV(v.WriteFile("k", data(32, 2*rootsChunk), 0o644))
	}, run: func(h *harness) {
		h.appendSync("g", data(33, 5000))
		h.writeFileAt("h", 100, data(34, 50), false)          // overwrite, not synced: DIRTY
		h.truncate("g", 12*rootsChunk, true)                  // grows with holes
		h.writeFileAt("g", 5*rootsChunk, data(35, 100), true) // into a hole
		h.punchRoots("h", rootsChunk, 2*rootsChunk, true)     // holes, the root says so
		h.writeFileAt("h", rootsChunk, data(36, 2*rootsChunk), true)
		h.truncate("g", 2*rootsChunk+7, true)
		h.writeFile("n", data(37, 3*rootsChunk), false) // new, not synced
		h.writeFileAt("k", rootsChunk, data(38, rootsChunk), false)
		h.truncate("g", 0, false)
	}},
	{name: "groups", setup: func(v *vault.Vault) {
		// Two tag-block groups (256 chunks each).
		mustV(v.WriteFile("big", data(40, 300*rootsChunk), 0o644))
	}, run: func(h *harness) {
		h.writeFileAt("big", 290*rootsChunk, data(41, 20*rootsChunk), true) // grows the second group
		h.writeFileAt("big", 10*rootsChunk, data(42, 100), false)
		h.truncate("big", 200*rootsChunk+7, true)   // drops the second group
		h.truncate("big", 600*rootsChunk+10, false) // a third group, past holes
	}},
}

// rootProblemOK reports whether fsck's dirty-root or bad-root p may be
// left by a crash: only in a file whose fsync claim does not hold
// (written since, or never synced): a file fsynced and not touched since
// has a clean header that matches it. After fsck --repair, only in a file
// with damage v1's rules find too (repair re-roots every file whose
// chunks all authenticate; dataDamageOK judged the damage): so a file
// changed since its fsync reads after repair with each chunk old or new,
// as in v1 (§13).
func (h *harness) rootProblemOK(p fsck.Problem, all []fsck.Problem, files map[string]fileClaim, beforeRepair bool) bool {
	if _, claimed := files[strings.TrimPrefix(p.PlainPath, "/")]; claimed {
		return false
	}
	return beforeRepair || slices.ContainsFunc(all, func(q fsck.Problem) bool {
		return q.PlainPath == p.PlainPath && q.Kind != fsck.KindDirtyRoot && q.Kind != fsck.KindBadRoot
	})
}

// punchRoots is punch for a bound vault: the file is opened through the
// recorded session's engine at its place, as the FUSE frontend does.
func (h *harness) punchRoots(p string, off, length int64, sync bool) {
	h.label(fmt.Sprintf("punch %s %d+%d", p, off, length))
	h.touchRange(p, off, off+length, false)
	tr := h.sess.Tree()
	dirfd, id, n := h.parentOf(tr, p)
	defer backing.Close(dirfd)
	fd, st, err := backing.OpenRegular(dirfd, n.Backing, unix.O_RDWR)
	h.must(err)
	bf := h.fs.NewFile(fd, &st)
	defer bf.Close()
	cf, err := h.sess.Engine().OpenAt(bf, tr.Place(id, n))
	h.must(err)
	h.must(cf.PunchHole(off, length))
	if sync {
		h.must(cf.Sync())
	}
	h.must(cf.Close())
	if sync {
		h.claimFile(p, h.rec.Len())
	}
}
