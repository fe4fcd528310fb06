package upgrade

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
)

// TestHalfUpgradedRefused: with the upgrade marker and a config without
// the flag, every open but the upgrade's refuses the vault; with the flag
// the marker is a lost last step and the vault opens.
func TestHalfUpgradedRefused(t *testing.T) {
	dir, master, _ := newV2Vault(t, "a")
	writeMarkerFile(t, dir, testVaultID, master)
	for name, open := range map[string]func() (*session.Session, error){
		"Open": func() (*session.Session, error) { return session.Open(dir, password, session.Options{}) },
		"OpenWith": func() (*session.Session, error) {
			return session.OpenWith(dir, keyslot.Credentials{Password: pwFunc(password)}, session.Options{})
		},
		"OpenWithMasterKey": func() (*session.Session, error) { return session.OpenWithMasterKey(dir, master, session.Options{}) },
	} {
		if s, err := open(); !errors.Is(err, session.ErrUpgradeIncomplete) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s of a half-upgraded vault: %v", name, err)
		}
	}
	s, err := session.OpenWith(dir, keyslot.Credentials{Password: pwFunc(password)}, session.Options{Upgrading: true})
	if err != nil {
		t.Fatalf("open for the upgrade: %v", err)
	}
	res, err := Content(s, nil)
	s.Close()
	if err != nil || !res.Resumed || !bytes.Equal(res.VaultID, testVaultID) {
		t.Fatalf("Content: %+v %v", res, err)
	}
	s, err = session.Open(dir, password, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !bytes.Equal(s.Params().VaultID, testVaultID) || !s.Tree().Bound() {
		t.Fatalf("after the upgrade: %+v", s.Params())
	}
	// A marker beside a bound config: opens (the last step was lost).
	if err := os.WriteFile(filepath.Join(dir, config.UpgradeMarkerName), testVaultID, 0o400); err != nil {
		t.Fatal(err)
	}
	s2, err := session.Open(dir, password, session.Options{})
	if err != nil {
		t.Fatalf("bound vault with a leftover marker: %v", err)
	}
	s2.Close()
}

// TestUpgradeBlocked: a file with a hard link outside the vault cannot be
// bound (the upgrade does not know that name's place); the upgrade says so
// before it writes anything.
func TestUpgradeBlocked(t *testing.T) {
	dir, _, _ := newV2Vault(t, "a")
	s, err := session.OpenWith(dir, keyslot.Credentials{Password: pwFunc(password)}, session.Options{Upgrading: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rootfd, err := backing.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close(rootfd)
	id, err := s.Tree().DirIDs().Read(rootfd, bind.Place{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Tree().Name(id, "a")
	// A header, so that the file is converted (an empty one is skipped).
	bf := backing.NewFile(mustOpen(t, rootfd, a.Backing), nil)
	f, err := s.Engine().OpenAt(bf, s.Tree().Place(id, a))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	bf.Close()
	// A second name outside the vault: its place is unknown, so it
	// cannot be bound (a third name inside would go to the links file).
	nb, _ := s.Tree().Name(id, "b")
	if err := (*backing.FS)(nil).Linkat(rootfd, a.Backing, rootfd, nb.Backing); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, a.Backing), filepath.Join(t.TempDir(), "outside")); err != nil {
		t.Fatal(err)
	}
	before := readConfig(t, dir)
	_, err = Content(s, nil)
	if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "cannot see") {
		t.Fatalf("Content with a hard link outside the vault: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, config.UpgradeMarkerName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a blocked upgrade wrote its marker: %v", err)
	}
	if !bytes.Equal(before, readConfig(t, dir)) {
		t.Fatal("a blocked upgrade changed the config")
	}
}

func mustOpen(t *testing.T, dirfd int, name string) int {
	t.Helper()
	fd, _, err := backing.OpenRegular(dirfd, name, os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestUpgradeAssignFirstDir: a file op goes to the first in post-order of
// the directories it changes, all names of a links-file op included, so
// that no directory's conflict copies of its ID are converted before the
// names made under them (a resumed scan would not see those any more).
func TestUpgradeAssignFirstDir(t *testing.T) {
	dirs := []*upDir{{plain: "/a", post: 2}, {plain: "/b", post: 0}, {plain: "/c", post: 1}}
	u := &upgrader{}
	f := func(d *upDir) *upFile { return &upFile{dir: d} }
	u.assign(upOp{kind: opLinks, f: f(dirs[0]), more: []*upFile{f(dirs[2]), f(dirs[1])}})
	u.assign(upOp{kind: opPair, f: f(dirs[0]), g: f(dirs[2])})
	if len(dirs[1].ops) != 1 || dirs[1].ops[0].kind != opLinks {
		t.Errorf("links op in /b (first in post-order): %+v", dirs[1].ops)
	}
	if len(dirs[2].ops) != 1 || dirs[2].ops[0].kind != opPair {
		t.Errorf("pair op in /c: %+v", dirs[2].ops)
	}
}

// writeMarkerFile writes dir's upgrade marker for vid, tagged under
// master (nil: untagged, as builds before the tag wrote it).
func writeMarkerFile(t *testing.T, dir string, vid, master []byte) {
	t.Helper()
	b := bytes.Clone(vid)
	if master != nil {
		tag, err := keys.UpgradeMarkerTag(master, vid)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, tag[:]...)
	}
	p := filepath.Join(dir, config.UpgradeMarkerName)
	os.Remove(p)
	if err := os.WriteFile(p, b, 0o400); err != nil {
		t.Fatal(err)
	}
}

// TestPlantedUpgradeMarker (issue 18, L3): a marker this vault did not
// write (untagged, garbage, or another vault's, tagged under its key)
// neither blocks the vault nor makes its upgrade adopt the VaultID in it.
func TestPlantedUpgradeMarker(t *testing.T) {
	planted := bytes.Repeat([]byte{0xa7}, config.VaultIDSize)
	_, otherMaster, _ := newV2Vault(t, "other")
	for name, content := range map[string]func(dir string){
		"untagged":      func(dir string) { writeMarkerFile(t, dir, planted, nil) },
		"other vault's": func(dir string) { writeMarkerFile(t, dir, planted, otherMaster) },
		"garbage": func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, config.UpgradeMarkerName), bytes.Repeat([]byte{1}, 40), 0o400); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, _, _ := newV2Vault(t, "a")
			content(dir)
			s, err := session.Open(dir, password, session.Options{})
			if err != nil {
				t.Fatalf("a planted marker blocks the vault: %v", err)
			}
			s.Close()
			s, err = session.OpenWith(dir, keyslot.Credentials{Password: pwFunc(password)}, session.Options{Upgrading: true})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Content(s, nil)
			s.Close()
			if err != nil {
				t.Fatalf("Content: %v", err)
			}
			if res.Resumed || bytes.Equal(res.VaultID, planted) {
				t.Fatalf("the upgrade adopted the planted marker: %+v", res)
			}
			s, err = session.Open(dir, password, session.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if bytes.Equal(s.Params().VaultID, planted) || !s.Tree().Bound() {
				t.Fatalf("after the upgrade: VaultID %x, bound %v", s.Params().VaultID, s.Tree().Bound())
			}
		})
	}
}
