package reversefs_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"github.com/encryptfs/encryptfs/internal/reversefs"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// TestDeterministic: two mounts of the same plaintext show byte-identical
// views (names, contents, symlink targets, sizes, modes, mtimes).
func TestDeterministic(t *testing.T) {
	plain := t.TempDir()
	makeTree(t, plain)
	c, master := initPlain(t, plain)
	mnt1, unmount1 := mountView(t, plain, c, master, reversefs.Options{})
	first := snapshot(t, mnt1, true)
	unmount1()
	mnt2, _ := mountView(t, plain, c, master, reversefs.Options{})
	second := snapshot(t, mnt2, true)
	if d := diffSnapshots(first, second); len(d) > 0 {
		t.Fatalf("views differ between mounts:\n%s", strings.Join(d, "\n"))
	}
	// Sanity: the view is not the plaintext and has the expected shape.
	if len(first) < 30 {
		t.Fatalf("view has only %d entries", len(first))
	}
	conf, err := os.ReadFile(filepath.Join(mnt2, names.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(plain, reversefs.ConfigName))
	if !bytes.Equal(conf, want) {
		t.Fatal("encryptfs.conf in the view is not the reverse config")
	}
	for rel := range first {
		base := filepath.Base(rel)
		if strings.HasPrefix(base, ".") || strings.Contains(base, "chunk") || strings.Contains(base, "nested") {
			t.Errorf("plaintext-looking name in the view: %q", rel)
		}
	}
}

// TestCopyIsForwardVault: an rsync -a copy of the view opens with the vault
// package, and a cp -a copy mounted forward with internal/mount, and both
// show exactly the original tree (contents, symlinks, modes, mtimes).
func TestCopyIsForwardVault(t *testing.T) {
	plain := t.TempDir()
	makeTree(t, plain)
	c, master := initPlain(t, plain)
	mnt, _ := mountView(t, plain, c, master, reversefs.Options{})
	want := snapshot(t, plain, true, reversefs.ConfigName)

	rsynced := t.TempDir()
	run(t, "rsync", "-a", mnt+"/", rsynced+"/")
	copied := filepath.Join(t.TempDir(), "copy")
	run(t, "cp", "-a", mnt, copied)

	t.Run("vault", func(t *testing.T) {
		v, err := vault.Open(rsynced, testPassword)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		checkVault(t, v, plain)
	})
	t.Run("fsck", func(t *testing.T) {
		s, err := session.New(rsynced, c.Params, master, session.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rep, err := fsck.Check(context.Background(), s, fsck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Clean || rep.Summary.Files < 15 {
			t.Fatalf("fsck of the copy: clean=%v, %d files, problems %+v", rep.Clean, rep.Summary.Files, rep.Problems)
		}
	})
	t.Run("forward mount", func(t *testing.T) {
		fwd := t.TempDir()
		s, err := session.New(copied, c.Params, master, session.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		mounttest.Track(fwd)
		srv, err := mount.Mount(mount.Options{Session: s, MountPoint: fwd, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := srv.Unmount(); err != nil {
				t.Errorf("unmount forward: %v", err)
			}
		})
		got := snapshot(t, fwd, true)
		if d := diffSnapshots(want, got); len(d) > 0 {
			t.Fatalf("forward mount of the copy differs from the plaintext:\n%s", strings.Join(d, "\n"))
		}
		run(t, "diff", "-r", "--no-dereference", "--exclude="+reversefs.ConfigName, "--exclude=fifo", plain, fwd)
	})
}

// checkVault compares every plaintext entry with the vault's view of it.
func checkVault(t *testing.T, v *vault.Vault, plain string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(plain, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(plain, p)
		if rel == "." || rel == reversefs.ConfigName {
			return nil
		}
		n++
		pi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		vi, err := v.Stat(rel)
		if err != nil {
			t.Errorf("vault stat %q: %v", rel, err)
			return nil
		}
		if pi.Mode() != vi.Mode() || !pi.ModTime().Equal(vi.ModTime()) {
			t.Errorf("%q: vault has %v %v, plaintext %v %v", rel, vi.Mode(), vi.ModTime(), pi.Mode(), pi.ModTime())
		}
		switch {
		case pi.Mode().IsRegular():
			want, _ := os.ReadFile(p)
			got, err := v.ReadFile(rel)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%q: vault content differs (%d vs %d bytes, %v)", rel, len(got), len(want), err)
			}
		case pi.Mode()&fs.ModeSymlink != 0:
			want, _ := os.Readlink(p)
			got, err := v.Readlink(rel)
			if err != nil || got != want {
				t.Errorf("%q: vault target %q, %v; want %q", rel, got, err, want)
			}
		case pi.IsDir():
			ents, err := os.ReadDir(p)
			if err != nil {
				return err
			}
			vents, err := v.ReadDir(rel)
			if err != nil || len(vents) != len(ents) {
				t.Errorf("%q: vault lists %d entries (%v), plaintext %d", rel, len(vents), err, len(ents))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 25 {
		t.Fatalf("walked only %d entries", n)
	}
}

// TestChangeOneFile: changing one chunk of one plaintext file changes only
// that chunk of that file's ciphertext; every other view file (contents)
// stays byte-identical.
func TestChangeOneFile(t *testing.T) {
	plain := t.TempDir()
	makeTree(t, plain)
	c, master := initPlain(t, plain)
	mnt, unmount := mountView(t, plain, c, master, reversefs.Options{})
	before := snapshot(t, mnt, false)
	enc := viewPath(t, c, master, "many")
	oldCipher, err := os.ReadFile(filepath.Join(mnt, enc))
	if err != nil {
		t.Fatal(err)
	}
	unmount()

	f, err := os.OpenFile(filepath.Join(plain, "many"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("changed"), 2*testChunk+100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ts := []unix.Timespec{unix.NsecToTimespec(testTime.UnixNano()), unix.NsecToTimespec(testTime.UnixNano())}
	if err := unix.UtimesNano(filepath.Join(plain, "many"), ts); err != nil {
		t.Fatal(err)
	}

	mnt2, _ := mountView(t, plain, c, master, reversefs.Options{})
	after := snapshot(t, mnt2, false)
	d := diffSnapshots(before, after)
	if len(d) != 1 || !strings.HasPrefix(d[0], enc+":") {
		t.Fatalf("want exactly %s to change, got:\n%s", enc, strings.Join(d, "\n"))
	}
	newCipher, err := os.ReadFile(filepath.Join(mnt2, enc))
	if err != nil {
		t.Fatal(err)
	}
	if len(newCipher) != len(oldCipher) {
		t.Fatalf("size changed: %d -> %d", len(oldCipher), len(newCipher))
	}
	// Chunk i of the stored file is at HeaderSize + i*(chunk+32).
	ccs := testChunk + 32
	for i := 0; 36+i*ccs < len(oldCipher); i++ {
		lo, hi := 36+i*ccs, min(36+(i+1)*ccs, len(oldCipher))
		same := bytes.Equal(oldCipher[lo:hi], newCipher[lo:hi])
		if same != (i != 2) {
			t.Errorf("chunk %d: unchanged=%v", i, same)
		}
	}
}

// viewPath returns the view name of a root-level plaintext name.
func viewPath(t *testing.T, c *config.Config, master []byte, name string) string {
	t.Helper()
	plain := t.TempDir()
	os.WriteFile(filepath.Join(plain, reversefs.ConfigName), []byte("{}"), 0o400)
	r, err := newRoot(t, plain, c.Params, master, reversefs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	viewName, err := r.ViewName(name)
	if err != nil {
		t.Fatal(err)
	}
	return viewName
}

// TestExcludes: excluded entries (by base name glob, by relative path) are
// invisible in the view and so in the copy.
func TestExcludes(t *testing.T) {
	plain := t.TempDir()
	makeTree(t, plain)
	c, master := initPlain(t, plain)
	mnt, _ := mountView(t, plain, c, master, reversefs.Options{Excludes: []string{"*.tmp", "keep/skip", "d1/sub"}})
	cp := t.TempDir()
	run(t, "rsync", "-a", mnt+"/", cp+"/")
	v, err := vault.Open(cp, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, tc := range []struct {
		rel     string
		visible bool
	}{
		{"skip.tmp", false}, {"d1/skip.tmp", false}, {"keep/skip", false}, {"d1/sub", false}, {"d1/sub/inner", false},
		{"keep", true}, {"d1", true}, {"d1/nested", true}, {"one", true},
	} {
		_, err := v.Stat(tc.rel)
		if tc.visible && err != nil {
			t.Errorf("%s: %v, want visible", tc.rel, err)
		}
		if !tc.visible && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want not exist", tc.rel, err)
		}
	}
	// Looking the excluded name up directly in the view fails too.
	if _, err := os.Lstat(filepath.Join(mnt, viewPath(t, c, master, "skip.tmp"))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("excluded entry found by lookup: %v", err)
	}
}

// TestReadOnly: every way of changing the view fails with EROFS.
func TestReadOnly(t *testing.T) {
	plain := t.TempDir()
	makeTree(t, plain)
	c, master := initPlain(t, plain)
	mnt, _ := mountView(t, plain, c, master, reversefs.Options{})
	file := filepath.Join(mnt, viewPath(t, c, master, "chunk"))
	dir := filepath.Join(mnt, viewPath(t, c, master, "d1"))
	for _, tc := range []struct {
		what string
		op   func() error
	}{
		{"create", func() error { return os.WriteFile(filepath.Join(mnt, "new"), nil, 0o644) }},
		{"open for write", func() error {
			f, err := os.OpenFile(file, os.O_WRONLY, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"truncate", func() error { return os.Truncate(file, 0) }},
		{"mkdir", func() error { return os.Mkdir(filepath.Join(mnt, "newdir"), 0o755) }},
		{"remove file", func() error { return os.Remove(file) }},
		{"remove dir", func() error { return os.Remove(dir) }},
		{"rename", func() error { return os.Rename(file, filepath.Join(mnt, "moved")) }},
		{"chmod", func() error { return os.Chmod(file, 0o600) }},
		{"symlink", func() error { return os.Symlink("x", filepath.Join(mnt, "sl")) }},
		{"link", func() error { return os.Link(file, filepath.Join(mnt, "hl")) }},
		{"setxattr", func() error { return unix.Setxattr(file, "user.x", []byte("1"), 0) }},
		{"utimes", func() error { return unix.UtimesNano(file, make([]unix.Timespec, 2)) }},
		{"remove dirid", func() error { return os.Remove(filepath.Join(mnt, names.DirIDFile)) }},
	} {
		if err := tc.op(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", tc.what, err)
		}
	}
	if _, err := os.Stat(filepath.Join(plain, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a write reached PLAINDIR: %v", err)
	}
}

// TestNewRootChecks: reverse mode refuses other ciphers, bad patterns and
// a PLAINDIR without a reverse config.
func TestNewRootChecks(t *testing.T) {
	k, err := kdf.New(bytes.NewReader(make([]byte, 64)), 1, kdf.MinMemoryKiB, 1)
	if err != nil {
		t.Fatal(err)
	}
	master := make([]byte, 32)
	siv := config.NewParams("aes-256-siv", testChunk, k)
	gcm := config.NewParams("aes-256-gcm", testChunk, k)
	withConf, empty := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(withConf, reversefs.ConfigName), []byte("{}"), 0o400)
	for _, tc := range []struct {
		what    string
		dir     string
		p       config.Params
		exclude []string
		want    error
	}{
		{"gcm", withConf, gcm, nil, reversefs.ErrCipher},
		{"bad pattern", withConf, siv, []string{"[x"}, reversefs.ErrPattern},
		{"empty pattern", withConf, siv, []string{""}, reversefs.ErrPattern},
		{"no config", empty, siv, nil, fs.ErrNotExist},
		{"ok", withConf, siv, []string{"*.tmp", "a/b"}, nil},
	} {
		r, err := newRoot(t, tc.dir, tc.p, master, reversefs.Options{Excludes: tc.exclude})
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.what, err, tc.want)
		}
		if r != nil {
			r.Close()
		}
	}
}

// TestForceOwner: the view shows ForceOwner as the owner of every entry.
func TestForceOwner(t *testing.T) {
	plain := t.TempDir()
	makeTree(t, plain)
	c, master := initPlain(t, plain)
	mnt, _ := mountView(t, plain, c, master, reversefs.Options{ForceOwner: &fuse.Owner{Uid: 1234, Gid: 5678}})
	n := 0
	err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		if st.Uid != 1234 || st.Gid != 5678 {
			t.Errorf("%s: owner %d:%d, want 1234:5678", p, st.Uid, st.Gid)
		}
		n++
		return nil
	})
	if err != nil || n < 5 {
		t.Fatalf("walked %d entries: %v", n, err)
	}
}

// TestOneFileSystem: with OneFileSystem a file system mounted below
// PLAINDIR shows up as an empty directory, and its entries cannot be looked
// up; without it the view goes through.
func TestOneFileSystem(t *testing.T) {
	mounttest.RequireRoot(t) // to mount a tmpfs
	plain := t.TempDir()
	makeTree(t, plain)
	c, master := initPlain(t, plain)
	inner := filepath.Join(plain, "mnt")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	mounttest.Track(inner)
	if err := unix.Mount("tmpfs", inner, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Unmount(inner, 0); err != nil {
			t.Errorf("unmount tmpfs: %v", err)
		}
	}()
	if err := os.WriteFile(filepath.Join(inner, "other-fs"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, one := range []bool{false, true} {
		mnt, unmount := mountView(t, plain, c, master, reversefs.Options{OneFileSystem: one})
		dir := viewPath(t, c, master, "mnt")
		ents, err := os.ReadDir(filepath.Join(mnt, dir))
		if err != nil {
			t.Fatal(err)
		}
		// Besides encryptfs.dirid: one entry without OneFileSystem, none with.
		if want := map[bool]int{false: 2, true: 1}[one]; len(ents) != want {
			t.Errorf("OneFileSystem %v: %d entries in the mount point, want %d", one, len(ents), want)
		}
		file := filepath.Join(dir, viewPath(t, c, master, "mnt/other-fs")) // encName takes a relative path
		if _, err := os.Stat(filepath.Join(mnt, file)); (err == nil) == one {
			t.Errorf("OneFileSystem %v: lookup below the mount point: %v", one, err)
		}
		unmount()
	}
}
