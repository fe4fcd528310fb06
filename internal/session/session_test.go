package session

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

var password = []byte("correct horse")

// cheapParams are vault parameters with the cheapest Argon2id.
func cheapParams(t *testing.T, cipher string) config.Params {
	t.Helper()
	k, err := kdf.Cheapest(bytes.NewReader(make([]byte, 64)))
	if err != nil {
		t.Fatal(err)
	}
	return config.NewParams(cipher, DefaultChunkSize, k)
}

// newVault creates a vault in a fresh directory and closes its session.
func newVault(t *testing.T) (dir string, master []byte) {
	t.Helper()
	dir = t.TempDir()
	s, master, err := Create(dir, password, CreateOptions{Params: cheapParams(t, string(AES256GCM)), Creator: "session test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, master
}

// addRootFile creates an empty file name in the root of s's vault.
func addRootFile(t *testing.T, s *Session, name string) {
	t.Helper()
	rootfd, err := backing.OpenRoot(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close(rootfd)
	id, err := s.Tree().DirIDs().Read(rootfd, bind.Place{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Tree().Name(id, name)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := s.Tree().Create(tree.NewDir(rootfd, nil, nil), n, 0, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	backing.Close(fd)
}

func TestCreateOpen(t *testing.T) {
	dir, master := newVault(t)
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("vault has %d entries, want config and dirid", len(ents))
	}
	c, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Creator != "session test" {
		t.Errorf("Creator %q", c.Creator)
	}
	s, err := Open(dir, password, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Dir() != dir || s.Params().Cipher != string(AES256GCM) || s.Engine() == nil || s.Tree() == nil {
		t.Fatalf("session %+v", s)
	}
	addRootFile(t, s, "hello")

	mk, err := OpenWithMasterKey(dir, master, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mk.Close()
	if checked, err := mk.CheckMasterKey(); !checked || err != nil {
		t.Fatalf("CheckMasterKey with the right key: %v, %v", checked, err)
	}
}

func TestCreateRefusesNonEmpty(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o600)
	if _, _, err := Create(dir, password, CreateOptions{Params: cheapParams(t, string(AES256GCM))}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create in a non-empty dir: %v", err)
	}
}

// TestCreateFailureLeavesDirEmpty: when the config cannot be written (a
// full file system), the root's dirid written before is removed again, so
// that creation can be retried in the same directory.
func TestCreateFailureLeavesDirEmpty(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	// One page: room for the dirid, none for the config.
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=4k"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	_, _, err := Create(dir, password, CreateOptions{Params: cheapParams(t, string(AES256GCM))})
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("Create on a full file system: %v", err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("failed Create left %v (%v)", ents, err)
	}
}

func TestWrongPassword(t *testing.T) {
	dir, _ := newVault(t)
	if _, err := Open(dir, []byte("wrong"), Options{}); !errors.Is(err, config.ErrWrongPassword) {
		t.Fatalf("Open with a wrong password: %v", err)
	}
}

func TestWrongMasterKey(t *testing.T) {
	dir, master := newVault(t)
	wrong := bytes.Repeat([]byte{1}, MasterKeySize)
	s, err := OpenWithMasterKey(dir, wrong, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// An empty root has no name to check the key on.
	if checked, err := s.CheckMasterKey(); checked || err != nil {
		t.Fatalf("empty vault: %v, %v", checked, err)
	}
	right, err := OpenWithMasterKey(dir, master, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer right.Close()
	addRootFile(t, right, "a")
	if _, err := s.CheckMasterKey(); !errors.Is(err, ErrWrongMasterKey) {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := OpenWithMasterKey(dir, master[:16], Options{}); !errors.Is(err, ErrMasterKey) {
		t.Fatalf("short key: %v", err)
	}
}

func TestReverseRefusedInForwardMode(t *testing.T) {
	p := cheapParams(t, string(AES256GCM))
	p.Reverse = true
	if _, err := New(t.TempDir(), p, make([]byte, MasterKeySize), Options{}); !errors.Is(err, ErrReverse) {
		t.Fatalf("New of a reverse vault: %v", err)
	}
}

// TestKDFMemoryLimit: the bound of Options applies to the config the
// session unlocks, whether it loads it or is given it.
func TestKDFMemoryLimit(t *testing.T) {
	dir, _ := newVault(t)
	limit := uint64(kdf.MinMemoryKiB - 1)
	if _, err := Open(dir, password, Options{MaxKDFMemoryKiB: limit}); !errors.Is(err, config.ErrKDFMemory) {
		t.Fatalf("Open over the bound: %v", err)
	}
	c, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, password, Options{Config: c, MaxKDFMemoryKiB: limit}); !errors.Is(err, config.ErrKDFMemory) {
		t.Fatalf("Open of a loaded config over the bound: %v", err)
	}
	s, err := Open(dir, password, Options{MaxKDFMemoryKiB: kdf.MinMemoryKiB})
	if err != nil {
		t.Fatalf("Open within the bound: %v", err)
	}
	s.Close()
}

func TestCloseWipesKeys(t *testing.T) {
	dir, master := newVault(t)
	s, err := OpenWithMasterKey(dir, master, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := s.keys
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{k.Contents, k.HeaderMAC, k.Names, k.XattrNames, k.XattrValues, k.Symlinks, k.Reverse} {
		if !bytes.Equal(b, make([]byte, len(b))) {
			t.Fatal("a subkey survived Close")
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestOpenReverse(t *testing.T) {
	plain := t.TempDir()
	for _, tc := range []struct {
		cipher string
		want   error
	}{{string(AES256SIV), nil}, {string(AES256GCM), ErrReverseCipher}} {
		c, master, err := config.Create(cheapParams(t, tc.cipher), password, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		data, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := config.WriteFileAtomic(plain, config.ReverseFileName, data); err != nil {
			t.Fatal(err)
		}
		for _, open := range []func() (*Reverse, error){
			func() (*Reverse, error) { return OpenReverse(plain, password, Options{}) },
			func() (*Reverse, error) { return OpenReverseWithMasterKey(plain, master, Options{}) },
		} {
			r, err := open()
			if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Fatalf("%s: %v, want %v", tc.cipher, err, tc.want)
			}
			if r != nil {
				if r.Dir() != plain || r.suite == nil || r.names == nil || r.links == nil || r.derive == nil || r.view == nil {
					t.Fatalf("reverse session %+v", r)
				}
				r.Close()
			}
		}
	}
}

// TestReverseBuildFailureWipes: when a cipher of a reverse session cannot
// be built, the keys of those already built are wiped (the content
// suite's here, built before the deriver whose key is cut short).
func TestReverseBuildFailureWipes(t *testing.T) {
	k, err := keys.Derive(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Wipe()
	k.Reverse = k.Reverse[:5]
	r := &Reverse{params: cheapParams(t, string(AES256SIV))}
	if err := r.build(k); err == nil {
		t.Fatal("built with a short reverse key")
	}
	if r.suite == nil {
		t.Fatal("the suite was not built before the deriver")
	}
	if _, err := r.suite.File(content.FileID{}); !errors.Is(err, content.ErrWiped) {
		t.Fatalf("suite after the failure: %v, want ErrWiped", err)
	}
}

// TestCloseWipesBinder: with location binding, Close wipes the binding
// key too: a check after Close fails with bind.ErrWiped (a closed
// session), never passes and never says the object is misplaced.
func TestCloseWipesBinder(t *testing.T) {
	dir, master := newVault(t)
	c, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "encryptfs.dirid"))
	s, err := New(dir, c.Params, master, Options{BoundVaultID: bytes.Repeat([]byte{7}, 16)})
	if err != nil {
		t.Fatal(err)
	}
	rootfd, err := backing.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close(rootfd)
	if _, err := s.Tree().DirIDs().InitRoot(rootfd); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tree().DirIDs().ReadRoot(rootfd); err != nil {
		t.Fatalf("before Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tree().DirIDs().ReadRoot(rootfd); !errors.Is(err, bind.ErrWiped) {
		t.Fatalf("after Close: %v, want bind.ErrWiped", err)
	}
}
