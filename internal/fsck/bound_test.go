package fsck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
)

// boundFixture is a vault with location binding (format v2): its config
// is v1 (vault.Create), every session turns binding on with the test hook
// session.Options.BoundVaultID. obs sees the changes of the vault's
// session (captureDirID).
type boundFixture struct {
	dir    string
	params config.Params
	master []byte
	roots  bool // file roots on in every session (roots_test.go)
}

var testVaultID = bytes.Repeat([]byte{0x6b}, 16)

// newBoundFixture creates the vault and returns it open through a bound
// session observed by obs (nil: none).
func newBoundFixture(t *testing.T, obs backing.Observer) (*boundFixture, *vault.Vault) {
	t.Helper()
	return newBoundFixtureWith(t, obs, false)
}

// newBoundFixtureWith is newBoundFixture, with file roots if roots.
func newBoundFixtureWith(t *testing.T, obs backing.Observer, roots bool) (*boundFixture, *vault.Vault) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cipher")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(dir, 0o700))
	v, err := vault.Create(dir, []byte("pw"), vault.Options{ChunkSize: chunk, KDFTime: 1, KDFMemoryKiB: 8192, KDFThreads: 1})
	must(err)
	fx := &boundFixture{dir: dir, master: v.MasterKey(), roots: roots}
	must(v.Close())
	c, err := config.Load(dir)
	must(err)
	fx.params = c.Params
	// The v1 root ID becomes a v2 one, bound to (VaultID, "").
	must(os.Remove(filepath.Join(dir, names.DirIDFile)))
	s := fx.session(t, obs)
	rootfd, err := backing.OpenRoot(dir)
	must(err)
	_, err = s.Tree().DirIDs().InitRoot(rootfd)
	backing.Close(rootfd)
	must(err)
	bv, err := vault.FromSession(s)
	must(err)
	t.Cleanup(func() { bv.Close() })
	return fx, bv
}

// session opens a bound session (closed in t.Cleanup).
func (fx *boundFixture) session(t *testing.T, obs backing.Observer) *session.Session {
	t.Helper()
	o := session.Options{BoundVaultID: testVaultID, FileRoots: fx.roots}
	if obs != nil {
		o.Backing = backing.NewFS(obs)
	}
	s, err := session.New(fx.dir, fx.params, fx.master, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// captureRename keeps the content of the first directory ID file renamed
// into place (step 1 of a directory rename: the ID file bound to the old
// and the new place) and of the first regular file renamed (as the
// rename leaves it, bound to both places until step 3).
type captureRename struct {
	mu          sync.Mutex
	dirID, file []byte
}

func (c *captureRename) Observe(ev backing.Event) {
	if ev.Op != backing.OpRename {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d/%s", ev.Dir2, ev.Name2))
	switch {
	case err != nil:
	case ev.Name2 == names.DirIDFile && c.dirID == nil:
		c.dirID = b
	case !names.IsReserved(ev.Name2) && c.file == nil:
		c.file = b
	}
}

// kinds counts the problems of a report by kind.
func kinds(rep *Report) map[Kind]int {
	m := map[Kind]int{}
	for _, p := range rep.Problems {
		m[p.Kind]++
	}
	return m
}

// TestBoundCheck: fsck of a bound vault walks with the places, reports
// moved contents (misplaced-file), a copied directory ID
// (misplaced-dir), and is clean on an untouched vault.
func TestBoundCheck(t *testing.T) {
	fx, v := newBoundFixture(t, nil)
	for _, d := range []string{"/d1", "/d2", "/d3", "/d3/sub"} {
		if err := v.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"/a", "/b", "/d1/x", "/d3/sub/y"} {
		if err := v.WriteFile(f, bytes.Repeat([]byte(f), 3000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Rename("/b", "/d2/b"); err != nil {
		t.Fatal(err)
	}
	v.Close()
	s := fx.session(t, nil)
	rep, err := Check(context.Background(), s, Options{})
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("untouched bound vault: %v %v", rep.Problems, err)
	}
	bp := func(plain string) string {
		t.Helper()
		return filepath.Join(fx.dir, boundBackingPath(t, s, plain))
	}
	// d1/x moved to d1/z; d3's ID file copied into d2.
	z := filepath.Join(filepath.Dir(bp("/d1/x")), encName(t, s, "/d1", "z"))
	if err := os.Rename(bp("/d1/x"), z); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(bp("/d3"), names.DirIDFile))
	if err != nil {
		t.Fatal(err)
	}
	d2id := filepath.Join(bp("/d2"), names.DirIDFile)
	os.Remove(d2id)
	if err := os.WriteFile(d2id, raw, 0o400); err != nil {
		t.Fatal(err)
	}
	rep, err = Check(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(rep)
	if got[KindMisplacedFile] != 1 || got[KindMisplacedDir] != 1 {
		t.Errorf("after the moves: %v, want one misplaced-file and one misplaced-dir:\n%v", got, rep.Problems)
	}
}

// TestBoundRepairStale: a crash during a rename, link or unlink can leave
// a directory or a one-name file bound to two places (stale-binding);
// --repair drops the binding of the place it is not at, and the vault
// checks clean after.
func TestBoundRepairStale(t *testing.T) {
	capt := &captureRename{}
	fx, v := newBoundFixture(t, capt)
	if err := v.Mkdir("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile("/f", []byte("contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := v.Rename("/d", "/e"); err != nil {
		t.Fatal(err)
	}
	if err := v.Rename("/f", "/g"); err != nil {
		t.Fatal(err)
	}
	v.Close()
	s := fx.session(t, nil)
	// The states a crash before step 3 of a rename leaves: e's ID file
	// bound to /d and /e, g's header bound to /f and /g.
	if capt.dirID == nil || capt.file == nil {
		t.Fatal("nothing captured")
	}
	e := filepath.Join(fx.dir, boundBackingPath(t, s, "/e"), names.DirIDFile)
	os.Remove(e)
	if err := os.WriteFile(e, capt.dirID, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fx.dir, boundBackingPath(t, s, "/g")), capt.file, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(rep); got[KindStaleBinding] != 2 || len(rep.Problems) != 2 {
		t.Fatalf("stale bindings: %v, want 2 stale-binding:\n%v", got, rep.Problems)
	}
	rr, err := Repair(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Fixes) != 2 || len(rr.Failed) != 0 || len(rr.After.Problems) != 0 {
		t.Fatalf("repair: fixes %v, failed %v, after %v", rr.Fixes, rr.Failed, rr.After.Problems)
	}
	bv, err := vault.FromSession(fx.session(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer bv.Close()
	if got, err := bv.ReadFile("/g"); err != nil || string(got) != "contents" {
		t.Errorf("/g after repair: %q, %v", got, err)
	}
	if _, err := bv.ReadDir("/e"); err != nil {
		t.Errorf("/e after repair: %v", err)
	}
}

// boundBackingPath is fixture.backingPath for a bound session.
func boundBackingPath(t *testing.T, s *session.Session, plain string) string {
	t.Helper()
	tr := s.Tree()
	fd, err := backing.OpenRoot(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	p := tr.RootPlace()
	var rel []string
	comps := splitPath(plain)
	for i, c := range comps {
		id, err := tr.DirIDs().Read(fd, p)
		if err != nil {
			t.Fatal(err)
		}
		n, err := tr.Name(id, c)
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, n.Backing)
		if i < len(comps)-1 {
			sub, err := backing.OpenSubdir(fd, n.Backing)
			backing.Close(fd)
			if err != nil {
				t.Fatal(err)
			}
			fd, p = sub, tr.Place(id, n)
		}
	}
	backing.Close(fd)
	return filepath.Join(rel...)
}

// encName is the backing name of name in directory dir (a plaintext path).
func encName(t *testing.T, s *session.Session, dir, name string) string {
	t.Helper()
	b := boundBackingPath(t, s, dir+"/"+name)
	return filepath.Base(b)
}

// splitPath splits "/a/b" into a, b.
func splitPath(plain string) []string {
	var out []string
	for _, c := range bytes.Split([]byte(plain[1:]), []byte("/")) {
		out = append(out, string(c))
	}
	return out
}
