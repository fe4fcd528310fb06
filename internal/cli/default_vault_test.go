package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// TestDefaultVaultPaths: the main user paths on the vault `encryptfs
// init` makes by default (format 2, location-bound), which is what users
// get; most CLI tests keep format 1 (newVault). One vault, one step after
// the other (each needs what the ones before left): init, mount, write
// and read, unmount, fsck, import, ls, cat, export, passwd, key add, key
// remove, and the mount again with what is left. Reverse mode is format 1
// only (TestInitFormats).
func TestDefaultVaultPaths(t *testing.T) {
	fstest.RequireFUSE(t)
	dir := filepath.Join(t.TempDir(), "cipher")
	pf, npf := writePassfile(t, "pw"), writePassfile(t, "new")
	keyfile := filepath.Join(t.TempDir(), "kf")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	src := makePlainTree(t)
	dest := filepath.Join(t.TempDir(), "out")
	var keySlot string

	steps := []struct {
		name string
		args []string
		code int
		then func(t *testing.T, r result)
	}{
		{"init", append(append([]string{"init", "--passfile", pf}, cheapKDF...), dir), 0, func(t *testing.T, _ result) {
			r := run(t, "", "info", "--json", dir)
			r.want(t, 0)
			var info infoJSON
			if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || info.FormatVersion != 2 || !slices.Contains(info.FeatureFlags, "BoundLocations") {
				t.Fatalf("init's default is not a bound format-2 vault (%v): %s", err, r.stdout)
			}
		}},
		{"mount", []string{"mount", "--passfile", pf, dir, mnt}, 0, func(t *testing.T, _ result) {
			must(t, os.MkdirAll(filepath.Join(mnt, "d", "e"), 0o755))
			writeFile(t, filepath.Join(mnt, "d", "e", "note.txt"), "written through the mount")
			must(t, os.Rename(filepath.Join(mnt, "d", "e", "note.txt"), filepath.Join(mnt, "d", "note.txt")))
			must(t, os.Link(filepath.Join(mnt, "d", "note.txt"), filepath.Join(mnt, "note-link")))
			for _, p := range []string{"d/note.txt", "note-link"} {
				if got, err := os.ReadFile(filepath.Join(mnt, p)); err != nil || string(got) != "written through the mount" {
					t.Fatalf("read %s: %q %v", p, got, err)
				}
			}
		}},
		{"unmount", []string{"unmount", mnt}, 0, nil},
		{"fsck", []string{"fsck", "--passfile", pf, dir}, 0, nil},
		{"import", []string{"import", "--passfile", pf, dir, src, "in"}, 0, nil},
		{"ls", []string{"ls", "-R", "--passfile", pf, dir}, 0, func(t *testing.T, r result) {
			for _, want := range []string{"d/note.txt", "note-link", "in/a.txt", "in/sub/big.bin", "in/sub/link"} {
				if !strings.Contains(r.stdout, want+"\n") {
					t.Fatalf("ls -R lacks %s:\n%s", want, r.stdout)
				}
			}
		}},
		{"cat", []string{"cat", "--passfile", pf, dir, "d/note.txt", "in/a.txt"}, 0, func(t *testing.T, r result) {
			if r.stdout != "written through the mount"+"alpha\n" {
				t.Fatalf("cat: %q", r.stdout)
			}
		}},
		{"export", []string{"export", "--passfile", pf, dir, dest, "in"}, 0, func(t *testing.T, _ result) { sameTree(t, src, dest) }},
		{"fsck after import", []string{"fsck", "--passfile", pf, dir}, 0, nil},
		{"passwd", append([]string{"passwd", "--passfile", pf, "--new-passfile", npf, dir}, cheapKDF...), 0, nil},
		{"old password", []string{"ls", "--passfile", pf, dir}, ExitWrongPassword, nil},
		{"key add", nil, 0, func(t *testing.T, _ result) {
			keySlot = keyAdd(t, "", "--passfile", npf, "--new-keyfile", keyfile, dir)
		}},
		{"cat with the keyfile", []string{"cat", "--keyfile", keyfile, dir, "note-link"}, 0, func(t *testing.T, r result) {
			if r.stdout != "written through the mount" {
				t.Fatalf("cat --keyfile: %q", r.stdout)
			}
		}},
		{"key remove", nil, 0, func(t *testing.T, _ result) {
			run(t, "", "key", "remove", "--passfile", npf, dir, keySlot).want(t, 0)
			if r := run(t, "", "ls", "--keyfile", keyfile, dir); r.code == 0 {
				t.Fatalf("the removed keyfile still opens the vault: %s", r.stdout)
			}
		}},
		{"mount again", []string{"mount", "--ro", "--passfile", npf, dir, mnt}, 0, func(t *testing.T, _ result) {
			for p, want := range map[string]string{"note-link": "written through the mount", "in/sub/deeper/x.conf": "x=1\n"} {
				if got, err := os.ReadFile(filepath.Join(mnt, p)); err != nil || string(got) != want {
					t.Fatalf("read %s: %q %v", p, got, err)
				}
			}
		}},
		{"unmount again", []string{"unmount", mnt}, 0, nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			var r result
			if s.args != nil {
				r = run(t, "", s.args...)
				r.want(t, s.code)
			}
			if s.then != nil {
				s.then(t, r)
			}
		})
		if t.Failed() {
			return
		}
	}
}
