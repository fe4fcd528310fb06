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
	fstest.RequireFUSE(t)
	dir := filepath.Join(t.TempDir(), "cipher")
	pf := writePassfile(t, "pw")
	run(t, "", append(append([]string{"init", "--passfile", pf}, cheapKDF...), dir)...).want(t, 0)
	mnt := t.TempDir()
	cleanupMount(t, mnt)

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
