package upgrade

import (
	"os"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// TestUpgradeAfterRevoke (issue 18, M5): a bound vault without file roots
// and freshness, revoked to epoch 1, with files of both epochs and a
// directory of epoch 1, is upgraded (Content adds file roots,
// AddFreshness the flag). Before the fix the roots upgrade refused the
// root's ID file (its session had the current key only) and the freshness
// upgrade left the older keys sealed under the old Params (the vault no
// longer opened). Afterwards the new password opens the vault at epoch 1,
// every file reads back, each object kept its epoch, and a file written
// after the upgrade reads too.
func TestUpgradeAfterRevoke(t *testing.T) {
	p, err := config.NewParamsV2(string(session.AES256GCM), session.DefaultChunkSize).WithBoundLocations(testVaultID)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, master, err := session.CreateWith(dir, []keyslot.NewSlot{{Type: config.SlotPassword, Label: "pw", Password: password, KDF: cheapKDF(t)}},
		session.CreateOptions{Params: p})
	if err != nil {
		t.Fatal(err)
	}
	clear(master)
	writeVaultFile(t, s, nil, "old.txt", "written at epoch 0")
	s.Close()

	s, err = session.OpenWith(dir, keyslot.Credentials{Password: pwFunc(password)}, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	newPW := []byte("new password")
	if e, err := s.Revoke(keyslot.RevokeSpec{PasswordSlot: 1, NewPassword: newPW, KDF: cheapKDF(t)}); err != nil || e != 1 {
		t.Fatalf("Revoke = %d, %v", e, err)
	}
	s.Close()

	cr := keyslot.Credentials{Password: pwFunc(newPW)}
	s, err = session.OpenWith(dir, cr, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeVaultFile(t, s, nil, "new.txt", "written at epoch 1")
	mkdirVault(t, s, "newdir")
	writeVaultFile(t, s, []string{"newdir"}, "inner", "in a directory of epoch 1")
	s.Close()

	s, err = session.OpenWith(dir, cr, session.Options{Upgrading: true, FreshnessUse: session.FreshnessOff})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Content(s, nil)
	if err != nil {
		s.Close()
		t.Fatalf("Content after a revoke: %v", err)
	}
	if res.Files != 3 {
		t.Errorf("Content converted %d files, want 3", res.Files)
	}
	s.Close()
	s, err = session.OpenWith(dir, cr, session.Options{FreshnessUse: session.FreshnessOff})
	if err != nil {
		t.Fatalf("open after adding file roots: %v", err)
	}
	if added, err := s.AddFreshness(); err != nil || !added {
		s.Close()
		t.Fatalf("AddFreshness after a revoke = %v, %v", added, err)
	}
	s.Close()

	s, err = session.OpenWith(dir, cr, session.Options{FreshnessUse: session.FreshnessOff})
	if err != nil {
		t.Fatalf("open after the upgrade: %v", err)
	}
	defer s.Close()
	if !s.Params().Has(config.FlagFileRoots) || !s.Params().Has(config.FlagFreshness) || s.Epoch() != 1 {
		t.Fatalf("after the upgrade: epoch %d, flags %v", s.Epoch(), s.Params().FeatureFlags)
	}
	for _, f := range []struct {
		dir        []string
		name, data string
		epoch      uint32
	}{
		{nil, "old.txt", "written at epoch 0", 0},
		{nil, "new.txt", "written at epoch 1", 1},
		{[]string{"newdir"}, "inner", "in a directory of epoch 1", 1},
	} {
		got, epoch := readVaultFile(t, s, f.dir, f.name)
		if got != f.data || epoch != f.epoch {
			t.Errorf("%v/%s: %q of epoch %d, want %q of epoch %d", f.dir, f.name, got, epoch, f.data, f.epoch)
		}
	}
	writeVaultFile(t, s, []string{"newdir"}, "later", "after the upgrade")
	if got, _ := readVaultFile(t, s, []string{"newdir"}, "later"); got != "after the upgrade" {
		t.Errorf("a file written after the upgrade reads %q", got)
	}
}

// vaultDir opens directory path (names from the root) of s's bound vault
// and returns its fd and ID, checked at its place.
func vaultDir(t *testing.T, s *session.Session, path []string) (int, []byte) {
	t.Helper()
	fd, err := backing.OpenRoot(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Tree().DirIDs().ReadRoot(fd)
	if err != nil {
		backing.Close(fd)
		t.Fatal(err)
	}
	for _, name := range path {
		n, err := s.Tree().Name(id, name)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := backing.OpenSubdir(fd, n.Backing)
		if err == nil {
			id, err = s.Tree().DirIDs().Read(sub, s.Tree().Place(id, n))
		}
		backing.Close(fd)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fd = sub
	}
	return fd, id
}

// mkdirVault makes directory name in the root of s's bound vault.
func mkdirVault(t *testing.T, s *session.Session, name string) {
	t.Helper()
	fd, id := vaultDir(t, s, nil)
	defer backing.Close(fd)
	n, err := s.Tree().Name(id, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tree().Mkdir(tree.NewDir(fd, id, nil), n, 0o700); err != nil {
		t.Fatal(err)
	}
}

// writeVaultFile creates file name with data in directory path of s's
// bound vault, through the engine.
func writeVaultFile(t *testing.T, s *session.Session, path []string, name, data string) {
	t.Helper()
	fd, id := vaultDir(t, s, path)
	defer backing.Close(fd)
	n, err := s.Tree().Name(id, name)
	if err != nil {
		t.Fatal(err)
	}
	ffd, err := s.Tree().Create(tree.NewDir(fd, nil, nil), n, unix.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	b := os.NewFile(uintptr(ffd), name)
	defer b.Close()
	f, err := s.Engine().OpenAt(b, s.Tree().Place(id, n))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readVaultFile reads file name in directory path of s's bound vault and
// returns its contents and the epoch its header records.
func readVaultFile(t *testing.T, s *session.Session, path []string, name string) (string, uint32) {
	t.Helper()
	fd, id := vaultDir(t, s, path)
	defer backing.Close(fd)
	n, err := s.Tree().Name(id, name)
	if err != nil {
		t.Fatal(err)
	}
	ffd, _, err := backing.OpenRegular(fd, n.Backing, unix.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	b := os.NewFile(uintptr(ffd), name)
	defer b.Close()
	f, err := s.Engine().OpenAt(b, s.Tree().Place(id, n))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer f.Close()
	buf := make([]byte, 256)
	k, err := f.ReadAt(buf, 0)
	if k == 0 && err != nil {
		t.Fatalf("%s: read: %v", name, err)
	}
	hdr := make([]byte, 8)
	if _, err := b.ReadAt(hdr, 0); err != nil {
		t.Fatal(err)
	}
	return string(buf[:k]), uint32(hdr[4])<<24 | uint32(hdr[5])<<16 | uint32(hdr[6])<<8 | uint32(hdr[7])
}
