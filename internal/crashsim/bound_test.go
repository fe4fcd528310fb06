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
	// Hard links beyond the header's slots (fileengine/links.go): the third
	// name moves the bindings to the links file in the root, the fourth
	// rewrites it, then an unlink, a rename across directories and a
	// link under the links file, and unlinks back to two names (the
	// header again, the links file removed). Every name that exists in a
	// crash state must read the contents (checkClaims: h.linked).
	{name: "links", setup: func(v *vault.Vault) {
		for _, d := range []string{"d1", "d2"} {
			mustV(v.Mkdir(d, 0o755))
		}
		mustV(v.WriteFile("a", data(30, 5000), 0o644))
		mustV(v.WriteFile("d1/b", data(31, 100), 0o644))
	}, run: func(h *harness) {
		h.linkedTo("a", "a", "a2", "d1/a3", "d2/a4", "d2/a5", "d1/a6", "d1/"+longName("l"))
		h.link("a", "a2")                // #2: a header slot
		h.link("a", "d1/a3")             // #3: to the links file
		h.link("a", "d2/a4")             // #4: the links file rewritten
		h.link("a", "d1/"+longName("l")) // #5, a long name
		h.remove("a2")                   // unlink under the links file
		h.rename("d1/a3", "d2/a5")       // rename of one of many names
		h.link("d2/a4", "d1/a6")         // a link from another name
		h.remove("d1/" + longName("l"))  // down to four
		h.remove("d2/a4")                // three
		h.remove("d1/a6")                // two: back to the header
		h.syncDir("d1")
		h.syncDir("d2")
		h.syncDir("")
	}},
}

// link makes newP a hard link to oldP through the session's tree, as the
// FUSE frontend does (the vault package has no call for it).
func (h *harness) link(oldP, newP string) {
	h.label("link " + oldP + " " + newP)
	h.touch(newP, false)
	tr := h.sess.Tree()
	ofd, oid, on := h.parentOf(tr, oldP)
	defer backing.Close(ofd)
	nfd, nid, nn := h.parentOf(tr, newP)
	defer backing.Close(nfd)
	h.must(tr.Link(tree.NewDir(ofd, oid, nil), on, tree.NewDir(nfd, nid, nil), nn))
}

// linkedTo notes that names (some made later) are hard links of file p:
// in every crash state, each of them that exists must read p's contents
// as they are now, never fail as misplaced.
func (h *harness) linkedTo(p string, names ...string) {
	data, err := h.v.ReadFile(p)
	h.must(err)
	if h.linked == nil {
		h.linked = map[string][]byte{}
	}
	for _, n := range names {
		h.linked[n] = data
	}
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
	s, err := session.Open(dir, pw, session.Options{BoundVaultID: vaultID, FileRoots: roots, CompactRoots: roots, TrimmedLeaves: roots})
	if err != nil {
		t.Fatal(err)
	}
	rootfd, err := backing.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Tree().DirIDs().InitRoot(rootfd)
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
	h.must(tr.Rename(tree.NewDir(afd, aid, nil), an, tree.NewDir(bfd, bid, nil), bn, unix.RENAME_EXCHANGE))
	h.renames = append(h.renames, renameClaim{from: a, to: b, start: start, end: h.rec.Len()})
}

// parentOf opens the backing directory of p's parent, checking each
// directory's binding on the way, and returns it with its ID and p's
// name in it.
func (h *harness) parentOf(tr *tree.Tree, p string) (int, []byte, tree.Name) {
	fd, err := backing.OpenRoot(h.dir)
	h.must(err)
	id, err := tr.DirIDs().ReadRoot(fd)
	h.must(err)
	comps := strings.Split(p, "/")
	for _, c := range comps[:len(comps)-1] {
		n, err := tr.Name(id, c)
		h.must(err)
		sub, err := backing.OpenSubdir(fd, n.Backing)
		backing.Close(fd)
		h.must(err)
		fd = sub
		id, err = tr.DirIDs().Read(fd, tr.Place(id, n))
		h.must(err)
	}
	n, err := tr.Name(id, comps[len(comps)-1])
	h.must(err)
	return fd, id, n
}
