package fresh_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	fr "github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/sys/unix"
)

// backingName is the backing path of plaintext name (a file of the root)
// of the vault in dir.
func backingName(t *testing.T, dir, name string) string {
	t.Helper()
	s, err := session.Open(dir, password, session.Options{BoundVaultID: vaultID, FileRoots: true})
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.FromSession(s)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	b, err := v.EncryptPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, b)
}

// TestBatchRecordsWhatTheDeviceDid (issue 18 M3): the storage changes a
// name in the seconds between the mount's change and the batch that
// records it. The batch must record what the mount did, not what it
// reads back, so that the next check reports the storage's change (the
// batch used to record it as the device's own, and every check after it
// said OK):
//   - an older version of a file rewritten through the mount put back;
//   - a file written through the mount deleted;
//   - a file removed through the mount put back;
//   - a file created through the mount given an xattr by the storage,
//     or replaced by the file that was at its name before (the batch
//     records a created file as the engine told it, unread).
func TestBatchRecordsWhatTheDeviceDid(t *testing.T) {
	must := mustFor(t)
	cases := []struct {
		name string
		// act changes file f through the mount and, as the storage,
		// before the batch, in CIPHERDIR (b is f's backing path, old a
		// copy of it from before the mount's change).
		act  func(t *testing.T, f, b, old string)
		want string
		// status: an older header is a rollback at once; a deletion or
		// a name back is behind (a sync in flight could explain it)
		// until the grace period ends, as any deletion is.
		status fr.Status
	}{
		{"older version put back", func(t *testing.T, f, b, old string) {
			must(os.WriteFile(f, []byte("the second version"), 0o644))
			must(os.Remove(b))
			must(os.WriteFile(b, mustRead(t, old), 0o600))
		}, "older version", fr.RolledBack},
		{"written file deleted", func(t *testing.T, f, b, old string) {
			must(os.WriteFile(f, []byte("the second version"), 0o644))
			must(os.Remove(b))
		}, "deleted", fr.Behind},
		{"removed file put back", func(t *testing.T, f, b, old string) {
			must(os.Remove(f))
			must(os.WriteFile(b, mustRead(t, old), 0o600))
		}, "present again", fr.Behind},
		{"created file given an xattr", func(t *testing.T, f, b, old string) {
			must(os.Remove(f))
			must(os.WriteFile(f, []byte("a new file"), 0o644))
			must(unix.Setxattr(b, "user.planted", []byte("x"), 0))
		}, "xattrs differ", fr.Behind},
		{"created file replaced by the old one", func(t *testing.T, f, b, old string) {
			must(os.Remove(f))
			must(os.WriteFile(f, []byte("a new file"), 0o644))
			must(os.Remove(b))
			must(os.WriteFile(b, mustRead(t, old), 0o600))
		}, "replaced by another object", fr.Behind},
		{"made directory given an xattr", func(t *testing.T, f, b, old string) {
			must(os.Remove(f))
			must(os.Mkdir(f, 0o755))
			must(unix.Setxattr(b, "user.planted", []byte("x"), 0))
		}, "xattrs differ", fr.Behind},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// File roots: a header's generation tells versions apart.
			dir, state := newVaultWith(t, session.Options{BoundVaultID: vaultID, FileRoots: true})
			o := options(state, false)
			o.FileRoots = true
			mnt, s, unmount := mountWith(t, dir, o)
			f := filepath.Join(mnt, "f")
			must(os.WriteFile(f, []byte("the first version"), 0o644))
			must(s.Freshness().Flush())
			must(unmount())
			b := backingName(t, dir, "f")
			old := filepath.Join(t.TempDir(), "old")
			must(os.WriteFile(old, mustRead(t, b), 0o600))

			mnt, s, unmount = mountWith(t, dir, o)
			c.act(t, filepath.Join(mnt, "f"), b, old)
			must(s.Freshness().Flush())
			must(unmount())
			o.Freshness.Offline = true
			rep := statusWith(t, dir, o)
			if rep.Status != c.status || !strings.Contains(rep.String(), c.want) {
				t.Fatalf("want %s, %q:\n%s", c.status, c.want, rep)
			}
		})
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFailedLastBatchAdoptsNothing (issue 18 L1): the storage makes a
// mount's last batch fail (a file in place of the manifests directory).
// That used to leave the state as after a crash, and the next mount,
// strict or not, recorded the vault as it was, adopting a deletion the
// storage had made before. Now the mount ends cleanly with its changes
// kept in the local state: the next mount records just those, and the
// deletion stays reported.
func TestFailedLastBatchAdoptsNothing(t *testing.T) {
	must := mustFor(t)
	dir, state := newVault(t)
	mnt, s, unmount := mountWriter(t, dir, state)
	must(os.WriteFile(filepath.Join(mnt, "a"), []byte("a"), 0o644))
	must(os.WriteFile(filepath.Join(mnt, "b"), []byte("b"), 0o644))
	must(s.Freshness().Flush())
	must(unmount())
	must(os.Remove(backingName(t, dir, "b"))) // the storage deletes b

	mnt, _, unmount = mountWriter(t, dir, state)
	must(os.WriteFile(filepath.Join(mnt, "c"), []byte("written in the second mount"), 0o644))
	man := ownManifests(t, dir)
	must(os.Rename(man, man+".aside"))
	must(os.WriteFile(man, []byte("in the way"), 0o600))
	if err := unmount(); err == nil {
		t.Fatal("the last batch wrote through a file in place of the manifests directory")
	}
	must(os.Remove(man))
	must(os.Rename(man+".aside", man))

	// Strict: b's deletion is only behind (a sync could explain it), so
	// the mount goes on; it records c and nothing else.
	o := options(state, false)
	o.FreshnessStrict = true
	_, _, unmount = mountWith(t, dir, o)
	must(unmount())
	rep := status(t, dir, state)
	if rep.Status == fr.OK || !strings.Contains(rep.String(), "/b: deleted") {
		t.Fatalf("b's deletion was adopted:\n%s", rep)
	}
	if strings.Contains(rep.String(), "/c") {
		t.Fatalf("c, written through the mount, is not recorded:\n%s", rep)
	}
}
