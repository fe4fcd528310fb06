package vault

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/internal/session"
)

// Freshness (format v2 §6, format.md §15) through the session's test hook
// session.Options.Freshness: a writer session records what the vault
// package changes; an offline session checks (encryptfs freshness status)
// and accepts.

var freshVaultID = bytes.Repeat([]byte{0x5c}, bind.IDSize)

func freshOptions(state string, offline bool) session.Options {
	return freshOptionsAt(state, offline, time.Now())
}

// freshOptionsAt is freshOptions with the clock at now.
func freshOptionsAt(state string, offline bool, now time.Time) session.Options {
	return session.Options{BoundVaultID: freshVaultID, Freshness: &fresh.Options{
		StateDir: state, Interval: -1, Offline: offline, Now: func() time.Time { return now },
		Buckets: os.Getenv("ENCRYPTFS_TEST_MANIFEST_FILES") == ""}}
}

// freshCreate makes a vault in dir written by the device whose state is in
// state.
func freshCreate(t *testing.T, dir, state string) *Vault {
	t.Helper()
	v, err := create(dir, testPassword, cheap, freshOptions(state, false))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// freshOpen opens dir as the device whose state is in state (a mount).
func freshOpen(t *testing.T, dir, state string) *Vault {
	t.Helper()
	s, err := session.Open(dir, testPassword, freshOptions(state, false))
	if err != nil {
		t.Fatal(err)
	}
	v, err := fromSession(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustClose(t *testing.T, v *Vault) {
	t.Helper()
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
}

// freshCheck is encryptfs freshness status (accept: freshness accept).
func freshCheck(t *testing.T, dir, state string, accept bool) *fresh.Report {
	t.Helper()
	return freshCheckAt(t, dir, state, accept, time.Now())
}

// freshCheckAt is freshCheck with the clock at now.
func freshCheckAt(t *testing.T, dir, state string, accept bool, now time.Time) *fresh.Report {
	t.Helper()
	s, err := session.Open(dir, testPassword, freshOptionsAt(state, true, now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var rep *fresh.Report
	if accept {
		rep, err = s.Freshness().Accept()
	} else {
		rep, err = s.Freshness().Check()
	}
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// wantIssue fails unless rep has status st with an issue of that status
// on path whose words contain what.
func wantIssue(t *testing.T, rep *fresh.Report, st fresh.Status, path, what string) {
	t.Helper()
	if rep.Status != st {
		t.Fatalf("status %v, want %v:\n%s", rep.Status, st, rep)
	}
	for _, i := range rep.Issues {
		if i.Path == path && strings.Contains(i.What, what) && i.Status == st {
			return
		}
	}
	t.Fatalf("no %v issue %q on %q:\n%s", st, what, path, rep)
}

func wantOK(t *testing.T, rep *fresh.Report) {
	t.Helper()
	if rep.Status != fresh.OK {
		t.Fatalf("status %v, want OK:\n%s", rep.Status, rep)
	}
}

func backingOf(t *testing.T, v *Vault, dir, name string) string {
	t.Helper()
	p, err := v.EncryptPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, p)
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// TestFreshnessSingleDevice: each rollback or deletion of CIPHERDIR on a
// vault one device writes is reported by freshness status, on the right
// plaintext path; accept then makes status clean.
func TestFreshnessSingleDevice(t *testing.T) {
	cases := []struct {
		name string
		// attack changes CIPHERDIR; v is the vault open before (for
		// backing paths), snap a copy of CIPHERDIR made by setup.
		attack     func(t *testing.T, dir, snap string, paths map[string]string)
		path, what string
		// at once: an authentic counter went back, a rollback at
		// once; otherwise "behind" (a sync in flight could explain
		// it) until it outlasts the grace period.
		atOnce bool
	}{
		{"delete a file", func(t *testing.T, dir, _ string, p map[string]string) {
			if err := os.Remove(p["a/f1"]); err != nil {
				t.Fatal(err)
			}
		}, "/a/f1", "deleted", false},
		{"delete a directory", func(t *testing.T, dir, _ string, p map[string]string) {
			if err := os.RemoveAll(p["b"]); err != nil {
				t.Fatal(err)
			}
		}, "/b", "deleted", false},
		{"roll back a directory", func(t *testing.T, dir, snap string, p map[string]string) {
			rel, _ := filepath.Rel(dir, p["a"])
			if err := os.RemoveAll(p["a"]); err != nil {
				t.Fatal(err)
			}
			run(t, "cp", "-a", filepath.Join(snap, rel), p["a"])
		}, "/a/f2", "present again", false},
		{"roll back a directory (new file gone)", func(t *testing.T, dir, snap string, p map[string]string) {
			rel, _ := filepath.Rel(dir, p["a"])
			os.RemoveAll(p["a"])
			run(t, "cp", "-a", filepath.Join(snap, rel), p["a"])
		}, "/a/f3", "deleted", false},
		// An xattr this device set, then changed, put back as it was:
		// its digest is one this device recorded and replaced
		// (State.Replaced), an older state like a lower gen (issue 18,
		// I2: only "behind" before, until the grace period).
		{"roll back an xattr", func(t *testing.T, dir, snap string, p map[string]string) {
			rel, _ := filepath.Rel(dir, p["b"])
			copyXattrs(t, filepath.Join(snap, rel), p["b"])
		}, "/b", "xattrs differ", true},
		{"delete the epoch file", func(t *testing.T, dir, _ string, p map[string]string) {
			eps, _ := filepath.Glob(filepath.Join(dir, "encryptfs.epoch.*"))
			if len(eps) != 1 {
				t.Fatalf("epoch files %v", eps)
			}
			os.Remove(eps[0])
		}, "", "epoch file deleted", true},
		{"roll back the whole vault", func(t *testing.T, dir, snap string, p map[string]string) {
			os.RemoveAll(dir)
			run(t, "cp", "-a", snap, dir)
		}, "", "epoch went back", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			dir, state, snap := filepath.Join(tmp, "cipher"), filepath.Join(tmp, "state"), filepath.Join(tmp, "snap")
			os.Mkdir(dir, 0o700)
			v := freshCreate(t, dir, state)
			for _, d := range []string{"a", "b"} {
				if err := v.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			mustWrite(t, v, "a/f1", "one")
			mustWrite(t, v, "a/f2", "two")
			mustWrite(t, v, "b/g", "g")
			if err := v.SetXattr("b", "user.k", []byte("v1")); err != nil {
				t.Fatal(err)
			}
			mustClose(t, v)
			wantOK(t, freshCheck(t, dir, state, false))
			run(t, "cp", "-a", dir, snap)

			v = freshOpen(t, dir, state)
			if err := v.Remove("a/f2"); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, v, "a/f3", "three")
			if err := v.SetXattr("b", "user.k", []byte("v2")); err != nil {
				t.Fatal(err)
			}
			paths := map[string]string{}
			for _, n := range []string{"a", "b", "a/f1", "a/f3", "b/g"} {
				paths[n] = backingOf(t, v, dir, n)
			}
			mustClose(t, v)
			wantOK(t, freshCheck(t, dir, state, false))

			c.attack(t, dir, snap, paths)
			rep := freshCheck(t, dir, state, false)
			t.Logf("%s", rep)
			if c.atOnce {
				wantIssue(t, rep, fresh.RolledBack, c.path, c.what)
			} else {
				wantIssue(t, rep, fresh.Behind, c.path, c.what)
				// Still there an hour later: still behind.
				wantIssue(t, freshCheckAt(t, dir, state, false, time.Now().Add(time.Hour)), fresh.Behind, c.path, c.what)
			}
			// Past the grace period (or at once): rolled back, and
			// again when looked at again.
			later := time.Now().Add(fresh.DefaultGrace + time.Hour)
			rep = freshCheckAt(t, dir, state, false, later)
			t.Logf("%s", rep)
			wantIssue(t, rep, fresh.RolledBack, c.path, c.what)
			wantIssue(t, freshCheckAt(t, dir, state, false, later), fresh.RolledBack, c.path, c.what)
			// A mount that writes elsewhere does not launder it (but a
			// deleted epoch file, which took nothing else with it, is
			// simply written again).
			v = freshOpen(t, dir, state)
			mustWrite(t, v, "elsewhere", "x")
			mustClose(t, v)
			rep = freshCheckAt(t, dir, state, false, later)
			if c.name != "delete the epoch file" && rep.Status != fresh.RolledBack {
				t.Fatalf("after a mount wrote elsewhere: %v\n%s", rep.Status, rep)
			}
			t.Logf("after a mount: %s", rep)
			if rep := freshCheck(t, dir, state, true); rep.Status == fresh.OK && c.name != "delete the epoch file" {
				t.Fatalf("accept showed nothing:\n%s", rep)
			}
			wantOK(t, freshCheck(t, dir, state, false))
			// And the device writes on from there.
			v = freshOpen(t, dir, state)
			mustWrite(t, v, "after", "x")
			mustClose(t, v)
			wantOK(t, freshCheck(t, dir, state, false))
		})
	}
}

// copyXattrs replaces the user.* xattrs of dst by those of src.
func copyXattrs(t *testing.T, src, dst string) {
	t.Helper()
	run(t, "sh", "-c", `getfattr -d -m '^user\.' --absolute-names -e hex "$1" | sed "1s|.*|# file: $2|" | setfattr --restore=-`, "sh", src, dst)
}

// TestFreshnessFsck: fsck takes the freshness files in the root for the
// vault's own, not for unknown names in the reserved namespace.
func TestFreshnessFsck(t *testing.T) {
	tmp := t.TempDir()
	dir, state := filepath.Join(tmp, "cipher"), filepath.Join(tmp, "state")
	os.Mkdir(dir, 0o700)
	v := freshCreate(t, dir, state)
	mustWrite(t, v, "f", "x")
	mustClose(t, v)
	s, err := session.Open(dir, testPassword, session.Options{BoundVaultID: freshVaultID})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := fsck.Check(context.Background(), s, fsck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Fatalf("fsck of a vault with freshness: %v", rep.Problems)
	}
}
