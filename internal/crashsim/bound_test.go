package crashsim_test

import (
	"bytes"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	cnames "github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/tree"
	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/sys/unix"
)

// TestCrashReplayBound is TestCrashReplay for renames in a vault with
// location binding (format v2; tree/bound_rename.go): a rename adds the
// new place's binding and makes it durable, renames, makes that durable,
// then drops the old binding. Every crash state must open, read every
// synced file back at one of its names (so nothing reads as misplaced,
// which fsck would report as misplaced-dir or misplaced-file, never
// allowed), and show at most a stale second binding, which fsck --repair
// drops (the check after the repair must be clean of it).
func TestCrashReplayBound(t *testing.T) {
	for _, w := range boundWorkloads {
		t.Run(w.name, func(t *testing.T) {
			h := newHarnessAt(t, bytes.Repeat([]byte{0x3c}, 16), w.setup)
			w.run(h)
			h.replay()
		})
	}
}

var boundWorkloads = []workload{
	{name: "renames", setup: func(v *vault.Vault) {
		for _, d := range []string{"d1", "d2", "d3", "d4", "d4/sub"} {
			mustV(v.Mkdir(d, 0o755))
		}
		mustV(v.WriteFile("d1/x", data(20, 3000), 0o644))
		mustV(v.WriteFile("d1/y", data(21, 100), 0o644))
		mustV(v.WriteFile("d1/w", data(22, 5000), 0o644))
		mustV(v.WriteFile("d2/e1", data(23, 200), 0o644))
		mustV(v.WriteFile("d3/e2", data(24, 300), 0o644))
		mustV(v.WriteFile("d4/sub/z", data(25, 100), 0o644))
		mustV(v.WriteFile("d1/"+longName("m"), data(26, 100), 0o644))
	}, run: func(h *harness) {
		h.rename("d1/x", "d1/x2")                          // a file, in its directory
		h.rename("d1/w", "d2/w")                           // across directories
		h.rename("d1/x2", "d1/y")                          // over a target
		h.rename("d1/"+longName("m"), "d2/"+longName("k")) // long names
		h.rename("d4", "d3/d4")                            // a directory, across
		h.exchange("d2/e1", "d3/e2")                       // exchange two files
		h.exchange("d2", "d1")                             // exchange two directories
		h.syncDir("d1")
		h.syncDir("d2")
		h.syncDir("")
	}},
}

// bindVault turns vault v (just created, v1 root ID) into one with
// location binding: the root gets a v2 ID file bound to (vaultID, ""),
// and the vault is reopened through a bound session.
func bindVault(t *testing.T, v *vault.Vault, dir string, pw, vaultID []byte, roots bool) *vault.Vault {
	t.Helper()
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path.Join(dir, cnames.DirIDFile)); err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(dir, pw, session.Options{BoundVaultID: vaultID, FileRoots: roots})
	if err != nil {
		t.Fatal(err)
	}
	rootfd, err := backing.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Tree().InitRoot(rootfd)
	backing.Close(rootfd)
	if err != nil {
		t.Fatal(err)
	}
	bv, err := vault.FromSession(s)
	if err != nil {
		t.Fatal(err)
	}
	return bv
}

// exchange swaps a and b (renameat2 RENAME_EXCHANGE) through the
// session's tree, as the FUSE frontend does (the vault package has no
// call for it). Both names exist after it, each with the other's object.
func (h *harness) exchange(a, b string) {
	h.label("exchange " + a + " " + b)
	start := h.rec.Len()
	h.touch(a, true)
	h.touch(b, true)
	tr := h.sess.Tree()
	afd, aid, an := h.parentOf(tr, a)
	defer backing.Close(afd)
	bfd, bid, bn := h.parentOf(tr, b)
	defer backing.Close(bfd)
	h.must(tr.Rename(afd, aid, an, bfd, bid, bn, unix.RENAME_EXCHANGE))
	h.renames = append(h.renames, renameClaim{from: a, to: b, start: start, end: h.rec.Len()})
}

// parentOf opens the backing directory of p's parent, checking each
// directory's binding on the way, and returns it with its ID and p's
// name in it.
func (h *harness) parentOf(tr *tree.Tree, p string) (int, []byte, tree.Name) {
	fd, err := backing.OpenRoot(h.dir)
	h.must(err)
	id, err := tr.ReadRootDirID(fd)
	h.must(err)
	comps := strings.Split(p, "/")
	for _, c := range comps[:len(comps)-1] {
		n, err := tr.Name(id, c)
		h.must(err)
		sub, err := backing.OpenSubdir(fd, n.Backing)
		backing.Close(fd)
		h.must(err)
		fd = sub
		id, err = tr.ReadDirIDAt(fd, tr.Place(id, n))
		h.must(err)
	}
	n, err := tr.Name(id, comps[len(comps)-1])
	h.must(err)
	return fd, id, n
}
