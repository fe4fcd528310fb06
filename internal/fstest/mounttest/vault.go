package mounttest

import (
	"bytes"
	"github.com/encryptfs/encryptfs/internal/transport"
	"log"
	"os"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// Vault is a forward vault mounted for a test.
type Vault struct {
	Cipher, Mnt string        // CIPHERDIR and the mount point
	Srv         *mount.Server // the current mount (Remount replaces it)
	// Mounted is the session the current mount serves (Session makes a
	// new one): its engine's open files are the mount's.
	Mounted *session.Session
	Log     *SyncWriter // what the daemon logged
	Logger  *log.Logger // the daemon's logger, writing to Log
	Tree    *tree.Tree  // the tree of the mount's session, for planting entries in CIPHERDIR
	// VaultID, if set, turns location binding (format v2) on in every
	// session of the vault (session.Options.BoundVaultID): NewBoundVault.
	VaultID []byte
	// FileRoots turns file roots (format v2, design §5) on in every
	// session of a bound vault (session.Options.FileRoots): RootsEnv.
	FileRoots bool
	// CompactRoots, with FileRoots, stores tag block 0 compactly, as
	// every vault of encryptfs init (session.Options.CompactRoots).
	CompactRoots bool
	// TrimmedLeaves, with FileRoots, writes roots with trimmed leaves,
	// as every vault of encryptfs init (session.Options.TrimmedLeaves).
	TrimmedLeaves bool
}

// testParams and testMasterKey are the parameters and key of every test
// vault (no config file: the sessions are built from them directly).
var (
	testParams    = config.Params{FormatVersion: 1, Cipher: "aes-256-gcm", ChunkSize: 4096}
	testMasterKey = bytes.Repeat([]byte{9}, 32)
)

// Session returns a new session of the vault in v.Cipher, closed in
// t.Cleanup.
func (v *Vault) Session(t testing.TB) *session.Session {
	t.Helper()
	s, err := session.New(v.Cipher, testParams, testMasterKey, session.Options{BoundVaultID: v.VaultID, FileRoots: v.FileRoots, CompactRoots: v.CompactRoots, TrimmedLeaves: v.TrimmedLeaves})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// NewVault creates a vault in a temp dir and mounts it with the options
// mod changes (mod may be nil); it is unmounted in t.Cleanup, even if the
// test fails.
func NewVault(t testing.TB, mod func(*mount.Options)) *Vault {
	t.Helper()
	return NewVaultIn(t, t.TempDir(), mod)
}

// NewVaultIn is NewVault with CIPHERDIR in cipher, an empty directory
// (such as a FaultyDir view).
func NewVaultIn(t testing.TB, cipher string, mod func(*mount.Options)) *Vault {
	t.Helper()
	return newVault(t, cipher, nil, false, mod)
}

// boundVaultID is the VaultID of NewBoundVault's vaults.
var boundVaultID = bytes.Repeat([]byte{0x5b}, 16)

// NewBoundVault is NewVault for a vault with location binding (format v2,
// docs/design/format-v2.md §4): every directory and file is bound to its
// place, and the mount checks it.
func NewBoundVault(t testing.TB, mod func(*mount.Options)) *Vault {
	t.Helper()
	return newVault(t, t.TempDir(), boundVaultID, false, mod)
}

// NewRootsVault is NewBoundVault with file roots (format v2,
// docs/design/format-v2.md §5): tag blocks and a root in every file.
func NewRootsVault(t testing.TB, mod func(*mount.Options)) *Vault {
	t.Helper()
	return newVault(t, t.TempDir(), boundVaultID, true, mod)
}

// NewRootsVaultIn is NewRootsVault with CIPHERDIR in cipher, an empty
// directory (a tmpfs one for files past ext4's 16 TiB).
func NewRootsVaultIn(t testing.TB, cipher string, mod func(*mount.Options)) *Vault {
	t.Helper()
	return newVault(t, cipher, boundVaultID, true, mod)
}

// SparseDir returns an empty directory, removed in t.Cleanup, on a file
// system that holds sparse files up to 2^63 bytes: under /dev/shm when it
// is tmpfs, and "" otherwise (ext4, the usual temp dir, stops at 16 TiB).
func SparseDir(t testing.TB) string {
	t.Helper()
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) != nil || st.Type != unix.TMPFS_MAGIC {
		return ""
	}
	dir, err := os.MkdirTemp("/dev/shm", "encryptfs-test")
	if err != nil {
		return ""
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// BoundEnv, set to 1, makes every vault of NewVault and NewVaultIn a
// bound one (NewBoundVault), to run a package's whole suite with location
// binding on: ENCRYPTFS_TEST_BOUND=1 go test ./internal/forwardfs/.
const BoundEnv = "ENCRYPTFS_TEST_BOUND"

// RootsEnv, set to 1, makes every vault of NewVault, NewVaultIn and
// NewBoundVault a bound one with file roots (design §5), to run a
// package's whole suite with roots on:
// ENCRYPTFS_TEST_ROOTS=1 go test ./internal/forwardfs/.
const RootsEnv = "ENCRYPTFS_TEST_ROOTS"

// RootsEnvFileRoots, as the value of RootsEnv, makes those vaults use
// the FileRoots layout without CompactRoots and roots with whole-block
// leaves (vaults made before them); 1, and NewRootsVaultIn, give them the
// compact layout and trimmed leaves init makes.
const RootsEnvFileRoots = "fileroots"

// newVault is NewVaultIn, with location binding if vaultID is set, and
// file roots too if roots.
func newVault(t testing.TB, cipher string, vaultID []byte, roots bool, mod func(*mount.Options)) *Vault {
	t.Helper()
	fstest.RequireFUSE(t)
	env := os.Getenv(RootsEnv)
	roots = roots || env == "1" || env == RootsEnvFileRoots
	if vaultID == nil && (os.Getenv(BoundEnv) == "1" || roots) {
		vaultID = boundVaultID
	}
	v := &Vault{Cipher: cipher, Mnt: t.TempDir(), Log: &SyncWriter{}, VaultID: vaultID, FileRoots: roots, CompactRoots: roots && env != RootsEnvFileRoots, TrimmedLeaves: roots && env != RootsEnvFileRoots}
	v.Logger = log.New(v.Log, "", 0)
	s := v.Session(t)
	v.Tree = s.Tree()
	fd, err := backing.OpenRoot(v.Cipher)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Tree.DirIDs().InitRoot(fd); err != nil {
		t.Fatal(err)
	}
	backing.Close(fd)
	opts := mount.Options{Session: s, MountPoint: v.Mnt, Logger: v.Logger, Transport: Transport(t)}
	if mod != nil {
		mod(&opts)
	}
	if opts.Transport == transport.URing {
		RequireURing(t)
	}
	v.Mnt = opts.MountPoint
	Track(v.Mnt)
	srv, err := mount.Mount(opts)
	if err != nil {
		t.Fatal(err)
	}
	v.Srv, v.Mounted = srv, opts.Session
	t.Cleanup(func() {
		// v.Srv: a test may have remounted.
		if err := v.Srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
			// Last resort so that no mount is left behind.
			unix.Unmount(v.Mnt, unix.MNT_DETACH)
		}
	})
	return v
}

// Remount unmounts v and mounts CIPHERDIR again (fresh kernel caches).
func (v *Vault) Remount(t testing.TB) { v.RemountWith(t, nil) }

// RemountWith is Remount with options changed by mod (may be nil).
func (v *Vault) RemountWith(t testing.TB, mod func(*mount.Options)) {
	t.Helper()
	Must(t, v.Srv.Unmount())
	v.MountAgain(t, mod)
}

// MountAgain mounts CIPHERDIR on v.Mnt again, after the test unmounted it,
// with options changed by mod (may be nil).
func (v *Vault) MountAgain(t testing.TB, mod func(*mount.Options)) {
	t.Helper()
	opts := mount.Options{Session: v.Session(t), MountPoint: v.Mnt, Logger: v.Logger}
	if mod != nil {
		mod(&opts)
	}
	srv, err := mount.Mount(opts)
	Must(t, err)
	v.Srv, v.Mounted = srv, opts.Session
}
