package fsck

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/tree"
	"github.com/encryptfs/encryptfs/vault"
)

// linkRoot links root file old to each of news (plaintext names in the
// root) through session s's tree.
func linkRoot(t *testing.T, s *session.Session, old string, news ...string) {
	t.Helper()
	tr := s.Tree()
	fd, err := backing.OpenRoot(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close(fd)
	id, err := tr.DirIDs().ReadRoot(fd)
	if err != nil {
		t.Fatal(err)
	}
	on, err := tr.Name(id, old)
	if err != nil {
		t.Fatal(err)
	}
	for _, nn := range news {
		n, err := tr.Name(id, nn)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Link(tree.NewDir(fd, id, nil), on, tree.NewDir(fd, id, nil), n); err != nil {
			t.Fatalf("link %s %s: %v", old, nn, err)
		}
	}
}

// linksFiles lists the root's links files.
func linksFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, bind.LinksPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBoundLinksCheck: fsck of files with links files: clean when
// untouched; a links file no file uses (a crash's leftover) is
// orphan-links and --repair removes it; a links file deleted or swapped
// for another file's is bad-links (EIO at every name), which --repair
// leaves alone.
func TestBoundLinksCheck(t *testing.T) {
	fx, v := newBoundFixture(t, nil)
	for _, f := range []string{"/a", "/b"} {
		if err := v.WriteFile(f, bytes.Repeat([]byte(f), 3000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v.Close()
	s := fx.session(t, nil)
	linkRoot(t, s, "a", "a1", "a2", "a3")
	linkRoot(t, s, "b", "b1", "b2")
	rep, err := Check(context.Background(), s, Options{})
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("untouched vault with links files: %v %v", rep.Problems, err)
	}
	lf := linksFiles(t, fx.dir)
	if len(lf) != 2 {
		t.Fatalf("links files %v, want 2", lf)
	}

	// An orphan: a's links file kept aside, a brought back to two names
	// (its links file removed), the old one put back, as a lost removal
	// leaves it.
	old := map[string][]byte{}
	for _, p := range lf {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		old[p] = b
	}
	bv, err := vault.FromSession(fx.session(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"/a2", "/a3"} {
		if err := bv.Remove(n); err != nil {
			t.Fatal(err)
		}
	}
	bv.Close()
	left := linksFiles(t, fx.dir)
	if len(left) != 1 {
		t.Fatalf("links files after a went back to two names: %v", left)
	}
	var aLinks string
	for p := range old {
		if p != left[0] {
			aLinks = p
		}
	}
	if err := os.WriteFile(aLinks, old[aLinks], 0o400); err != nil {
		t.Fatal(err)
	}
	rep, err = Check(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(rep); got[KindOrphanLinks] != 1 || len(rep.Problems) != 1 {
		t.Fatalf("leftover links file: %v, want one orphan-links:\n%v", got, rep.Problems)
	}
	rr, err := Repair(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Fixes) != 1 || len(rr.Failed) != 0 || len(rr.After.Problems) != 0 {
		t.Fatalf("repair: fixes %v, failed %v, after %v", rr.Fixes, rr.Failed, rr.After.Problems)
	}
	if _, err := os.Stat(aLinks); !os.IsNotExist(err) {
		t.Fatalf("orphan links file after repair: %v", err)
	}

	// b's links file renamed to a's name: b's is missing, the one under
	// a's name is b's (a has no links file: that one is an orphan too).
	linkRoot(t, s, "a", "a4") // a gets a links file again
	if len(linksFiles(t, fx.dir)) != 2 {
		t.Fatal("a has no links file again")
	}
	if err := os.Rename(left[0], aLinks); err != nil {
		t.Fatal(err)
	}
	rep, err = Check(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(rep); got[KindBadLinks] != 2 || len(rep.Problems) != 2 {
		t.Fatalf("swapped links file: %v, want two bad-links:\n%v", got, rep.Problems)
	}
	rr, err = Repair(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Fixes) != 0 || len(rr.After.Problems) != 2 {
		t.Fatalf("repair of bad-links: fixes %v, after %v; want none and the same two", rr.Fixes, rr.After.Problems)
	}
}

// TestBoundLinksRepairStale: a file with four names whose links file
// still binds a fifth, removed name (the drop after an unlink lost in a
// crash) is stale-binding; --repair, having found all four names, keeps
// their bindings only, and the vault checks clean.
func TestBoundLinksRepairStale(t *testing.T) {
	fx, v := newBoundFixture(t, nil)
	if err := v.WriteFile("/a", []byte("contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	v.Close()
	s := fx.session(t, nil)
	linkRoot(t, s, "a", "a1", "a2", "a3", "a4")
	lf := linksFiles(t, fx.dir)
	if len(lf) != 1 {
		t.Fatalf("links files %v", lf)
	}
	before, err := os.ReadFile(lf[0])
	if err != nil {
		t.Fatal(err)
	}
	bv, err := vault.FromSession(fx.session(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := bv.Remove("/a4"); err != nil {
		t.Fatal(err)
	}
	bv.Close()
	if err := os.WriteFile(lf[0], before, 0o400); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(rep); got[KindStaleBinding] != 1 || len(rep.Problems) != 1 {
		t.Fatalf("links file with a removed name: %v, want one stale-binding:\n%v", got, rep.Problems)
	}
	rr, err := Repair(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Fixes) != 1 || len(rr.Failed) != 0 || len(rr.After.Problems) != 0 {
		t.Fatalf("repair: fixes %v, failed %v, after %v", rr.Fixes, rr.Failed, rr.After.Problems)
	}
	bv, err = vault.FromSession(fx.session(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer bv.Close()
	for _, n := range []string{"/a", "/a1", "/a2", "/a3"} {
		if got, err := bv.ReadFile(n); err != nil || string(got) != "contents" {
			t.Errorf("%s after repair: %q, %v", n, got, err)
		}
	}
}
