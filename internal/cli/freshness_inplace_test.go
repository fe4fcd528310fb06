package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"golang.org/x/sys/unix"
)

// TestFreshnessInPlaceRollback (issue 18 H2): files rewritten in place
// through the mount, the way shells and programs do it (`>`, `>>`, dd
// conv=notrunc, truncate), are recorded, so that the storage putting an
// older backing file back is a rollback: status exits 28 and a strict
// mount refuses the vault. Each rewrite is checked on its own, the
// newer backing file put back in between.
func TestFreshnessInPlaceRollback(t *testing.T) {
	dir, pf, mnt := newMountableVault(t, "pw")

	rewrites := map[string]func(p string) error{
		"redirect": func(p string) error { return os.WriteFile(p, []byte("rewritten with >"), 0o644) },
		"append": func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			_, err = f.WriteString(" and more")
			return errors.Join(err, f.Close())
		},
		"notrunc": func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.WriteAt([]byte("XY"), 3)
			return errors.Join(err, f.Close())
		},
		"truncate": func(p string) error { return unix.Truncate(p, 4) },
		"xattr":    func(p string) error { return unix.Setxattr(p, "user.tag", []byte("new"), 0) },
	}
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	for name := range rewrites {
		p := filepath.Join(mnt, name)
		must(t, os.WriteFile(p, []byte("the first version of "+name), 0o644))
		must(t, unix.Setxattr(p, "user.tag", []byte("old"), 0))
	}
	run(t, "", "unmount", mnt).want(t, 0)
	status := func() result {
		return run(t, "", "freshness", "status", "--passfile", pf, dir)
	}
	status().want(t, 0)

	// The first versions, as the storage keeps them.
	backingOf := func(name string) string {
		r := run(t, "", "encrypt-path", "--passfile", pf, dir, name)
		r.want(t, 0)
		return filepath.Join(dir, strings.TrimSpace(r.stdout))
	}
	old := map[string]string{}
	for name := range rewrites {
		old[name] = filepath.Join(t.TempDir(), name)
		cpA(t, backingOf(name), old[name])
	}

	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	for name, rewrite := range rewrites {
		must(t, rewrite(filepath.Join(mnt, name)))
	}
	run(t, "", "unmount", mnt).want(t, 0)
	status().want(t, 0)

	for name := range rewrites {
		t.Run(name, func(t *testing.T) {
			b := backingOf(name)
			now := filepath.Join(t.TempDir(), "now")
			cpA(t, b, now)
			must(t, os.Remove(b))
			cpA(t, old[name], b)
			r := status()
			r.want(t, ExitFreshRolledBack)
			if !strings.Contains(r.stdout, "/"+name) {
				t.Errorf("status does not name /%s:\n%s", name, r.stdout)
			}
			r = run(t, "", "mount", "--passfile", pf, "--freshness", "strict", dir, mnt)
			r.want(t, ExitFreshRolledBack)
			must(t, os.Remove(b))
			cpA(t, now, b)
			status().want(t, 0)
		})
	}
}

// TestDirtyHeaderReplay (issue 18 M1): while a file is open for writing
// through the mount, its header says DIRTY (odd generation) and the file
// reads by v1's rules until the close writes the clean header. Someone
// who copies the backing file in that window and puts it back later (the
// whole copy, or its header alone, which v1's rules read as an empty
// file) is reported: the close's clean header was recorded with a higher
// generation, so status exits 28, a strict mount refuses the vault and
// fsck reports the file as rolled back.
func TestDirtyHeaderReplay(t *testing.T) {
	dir, pf, mnt := newMountableVault(t, "pw")
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	p := filepath.Join(mnt, "db")
	must(t, os.WriteFile(p, []byte("version one, committed"), 0o644))
	r := run(t, "", "encrypt-path", "--passfile", pf, dir, "db")
	r.want(t, 0)
	b := filepath.Join(dir, strings.TrimSpace(r.stdout))
	// Recorded as created; the rewrite comes in a later mount.
	run(t, "", "unmount", mnt).want(t, 0)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)

	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt([]byte(", then version two"), 22)
	must(t, err)
	// The storage keeps the DIRTY state. Copied in this process: a fork
	// and exec (cp) closes the child's copy of f, and the FLUSH of that
	// close writes the clean header.
	dirtyBytes, err := os.ReadFile(b)
	must(t, err)
	dirty := filepath.Join(t.TempDir(), "dirty")
	must(t, os.WriteFile(dirty, dirtyBytes, 0o600))
	must(t, f.Close())
	run(t, "", "unmount", mnt).want(t, 0)
	run(t, "", "freshness", "status", "--passfile", pf, dir).want(t, 0)
	clean := filepath.Join(t.TempDir(), "clean")
	cpA(t, b, clean)

	headerOnly := func() {
		must(t, os.Truncate(b, 128))
	}
	for _, c := range []struct {
		name   string
		tamper func()
	}{{"whole", func() {}}, {"header", headerOnly}} {
		t.Run(c.name, func(t *testing.T) {
			must(t, os.Remove(b))
			cpA(t, dirty, b)
			c.tamper()
			r := run(t, "", "freshness", "status", "--passfile", pf, dir)
			r.want(t, ExitFreshRolledBack)
			if !strings.Contains(r.stdout, "/db") {
				t.Errorf("status does not name /db:\n%s", r.stdout)
			}
			run(t, "", "mount", "--passfile", pf, "--freshness", "strict", dir, mnt).want(t, ExitFreshRolledBack)
			r = run(t, "", "fsck", "--passfile", pf, dir)
			r.want(t, ExitFsckProblems)
			if !strings.Contains(r.stdout, "replayed-root") || strings.Contains(r.stdout, "dirty-root") {
				t.Errorf("fsck does not tell the replay from a crash:\n%s", r.stdout)
			}
			// --repair must not re-root the replayed state.
			r = run(t, "", "fsck", "--repair", "--passfile", pf, dir)
			r.want(t, ExitFsckProblems)
			if strings.Contains(r.stdout, "repair: ") {
				t.Errorf("fsck --repair re-rooted a replayed state:\n%s", r.stdout)
			}
			r = run(t, "", "freshness", "status", "--passfile", pf, dir)
			r.want(t, ExitFreshRolledBack)
			must(t, os.Remove(b))
			cpA(t, clean, b)
		})
	}
	run(t, "", "freshness", "status", "--passfile", pf, dir).want(t, 0)
}

// newMountableVault makes a vault with encryptfs init (password pw, init
// flags as given, the tests' cheap KDF) and an empty mount point that is
// unmounted at cleanup.
func newMountableVault(t *testing.T, pw string, flags ...string) (dir, pf, mnt string) {
	t.Helper()
	fstest.RequireFUSE(t)
	dir = filepath.Join(t.TempDir(), "cipher")
	pf = writePassfile(t, pw)
	args := append(append(append([]string{"init", "--passfile", pf}, flags...), cheapKDF...), dir)
	run(t, "", args...).want(t, 0)
	mnt = t.TempDir()
	cleanupMount(t, mnt)
	return dir, pf, mnt
}

// TestFreshnessCreatedFileTampered: the storage changes a file in the
// seconds between its creation through the mount and the batch that
// records it, on the transport ENCRYPTFS_TRANSPORT selects: an xattr
// added to its backing file, or the file replaced by one from before; and
// an xattr added to a directory made through the mount.
// The batch records a created file as the mount made it (no xattrs, its
// own header), not as the disk shows it, so status reports the change
// (exit 27, behind: a sync in flight could explain a deletion or an
// unknown object) instead of adopting it and saying OK.
func TestFreshnessCreatedFileTampered(t *testing.T) {
	dir, pf, mnt := newMountableVault(t, "pw")
	backingOf := func(name string) string {
		r := run(t, "", "encrypt-path", "--passfile", pf, dir, name)
		r.want(t, 0)
		return filepath.Join(dir, strings.TrimSpace(r.stdout))
	}
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.WriteFile(filepath.Join(mnt, "old"), []byte("a file from before"), 0o644))
	run(t, "", "unmount", mnt).want(t, 0)
	oldCopy := filepath.Join(t.TempDir(), "old")
	cpA(t, backingOf("old"), oldCopy)

	// The cases run in order on one vault: the second status reports the
	// first case's file too (still behind), and must report its own.
	for _, c := range []struct {
		name   string
		dir    bool // a directory made through the mount, not a file
		tamper func(t *testing.T, b string)
		want   string
	}{
		{"xattr", false, func(t *testing.T, b string) { must(t, unix.Setxattr(b, "user.planted", []byte("x"), 0)) }, "xattrs differ"},
		{"replaced", false, func(t *testing.T, b string) {
			must(t, os.Remove(b))
			cpA(t, oldCopy, b)
		}, "replaced by another object"},
		{"dir-xattr", true, func(t *testing.T, b string) { must(t, unix.Setxattr(b, "user.planted", []byte("x"), 0)) }, "xattrs differ"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := "new-" + c.name
			b := backingOf(name) // names are deterministic per directory
			run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
			if c.dir {
				must(t, os.Mkdir(filepath.Join(mnt, name), 0o755))
			} else {
				must(t, os.WriteFile(filepath.Join(mnt, name), []byte("written through the mount"), 0o644))
			}
			c.tamper(t, b)
			run(t, "", "unmount", mnt).want(t, 0)
			r := run(t, "", "freshness", "status", "--passfile", pf, dir)
			r.want(t, ExitFreshBehind)
			if !strings.Contains(r.stdout, "/"+name) || !strings.Contains(r.stdout, c.want) {
				t.Fatalf("status does not report /%s (%s):\n%s", name, c.want, r.stdout)
			}
		})
	}
}
