package mount

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/internal/fuseuring"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// TestMain fails the suite if a test left one of its mounts behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if left := leftMounts(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "mounts left behind: %v\n", left)
		code = 1
	}
	os.Exit(code)
}

// ourMounts records every mount point this test process used.
var ourMounts sync.Map

// leftMounts lists our mount points still in /proc/mounts.
func leftMounts() []string {
	b, _ := os.ReadFile("/proc/mounts")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		if _, ok := ourMounts.Load(f[1]); ok {
			out = append(out, l)
		}
	}
	return out
}

// requireRoot skips a test that needs root (to act as a second user),
// except under CI=true, where it fails instead.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but not root")
		}
		t.Skip("needs root")
	}
}

// testVault is a mounted vault for a test.
type testVault struct {
	cipher, mnt string
	srv         *Server
	log         *syncWriter
	tree        *tree.Tree
}

// testParams and testMasterKey are the parameters and key of every test
// vault (no config file: the sessions are built from them directly).
var (
	testParams    = config.Params{FormatVersion: 1, Cipher: "aes-256-gcm", ChunkSize: 4096}
	testMasterKey = bytes.Repeat([]byte{9}, 32)
)

// session returns a session of the vault in v.cipher, closed in
// t.Cleanup.
func (v *testVault) session(t testing.TB) *session.Session {
	t.Helper()
	s, err := session.New(v.cipher, testParams, testMasterKey, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newVault creates a vault in a temp dir and mounts it; it is unmounted
// in t.Cleanup, even if the test fails.
func newVault(t testing.TB, mod func(*Options)) *testVault {
	t.Helper()
	fstest.RequireFUSE(t)
	cipher, mnt := t.TempDir(), t.TempDir()
	v := &testVault{cipher: cipher, mnt: mnt, log: &syncWriter{buf: &bytes.Buffer{}}}
	s := v.session(t)
	tr := s.Tree()
	v.tree = tr
	fd, err := backing.OpenRoot(cipher)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.InitRoot(fd); err != nil {
		t.Fatal(err)
	}
	backing.Close(fd)
	opts := Options{Session: s, MountPoint: mnt, Logger: log.New(v.log, "", 0), Transport: testTransport(t)}
	if mod != nil {
		mod(&opts)
	}
	if opts.Transport == fuseuring.URing {
		requireURing(t)
	}
	v.mnt = opts.MountPoint
	ourMounts.Store(v.mnt, true)
	srv, err := Mount(opts)
	if err != nil {
		t.Fatal(err)
	}
	v.srv = srv
	t.Cleanup(func() {
		// v.srv: a test may have remounted.
		if err := v.srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
			// Last resort so that no mount is left behind.
			unix.Unmount(v.mnt, unix.MNT_DETACH)
		}
	})
	return v
}
