package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/fstest"
	"golang.org/x/sys/unix"
)

// The tamper suite through the mount (issue 18): every attack of
// vault.tamperV2Attacks (vault/tamper_full_test.go) again, on a default
// vault made by encryptfs init, with the state set up through a real
// mount by the writes shells and programs make (`>`, `>>`, dd
// conv=notrunc, truncate, mkdir, rename, unlink, setxattr), the storage attacker's
// change made to CIPHERDIR while unmounted, and the outcome checked the
// way a user meets it: a read through a new mount fails with EIO (and
// shows no bytes the file never held), or freshness status reports the
// path and a strict mount refuses the vault. TestTamperMountSuiteMatches
// keeps this suite in step with the vault's.

// tamperVault is a default vault, its mount point and its password file.
type tamperVault struct {
	dir, mnt, pf string
}

func newTamperVault(t *testing.T) *tamperVault {
	t.Helper()
	fstest.RequireFUSE(t)
	v := &tamperVault{dir: filepath.Join(t.TempDir(), "cipher"), mnt: t.TempDir(), pf: writePassfile(t, "pw")}
	run(t, "", append(append([]string{"init", "--passfile", v.pf}, cheapKDF...), v.dir)...).want(t, 0)
	cleanupMount(t, v.mnt)
	return v
}

func (v *tamperVault) mount(t *testing.T) {
	t.Helper()
	run(t, "", "mount", "--passfile", v.pf, v.dir, v.mnt).want(t, 0)
}

func (v *tamperVault) unmount(t *testing.T) {
	t.Helper()
	run(t, "", "unmount", v.mnt).want(t, 0)
}

// path is name in the mount.
func (v *tamperVault) path(name string) string { return filepath.Join(v.mnt, name) }

// backing is the backing path of name (encrypt-path).
func (v *tamperVault) backing(t *testing.T, name string) string {
	t.Helper()
	r := run(t, "", "encrypt-path", "--passfile", v.pf, v.dir, name)
	r.want(t, 0)
	return filepath.Join(v.dir, strings.TrimSpace(r.stdout))
}

// geometry is a content suite with the vault's cipher and chunk size and
// file roots, for its offsets only (format.md §16: header, then per group
// of 256 chunks a 4 KiB tag block and the chunks): its keys are zeros.
func (v *tamperVault) geometry(t *testing.T) *content.Suite {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(v.dir, "encryptfs.conf"))
	must(t, err)
	var c struct {
		Params struct {
			Cipher       string
			ChunkSize    int
			FeatureFlags []string
		}
	}
	must(t, json.Unmarshal(data, &c))
	if !hasFlag(c.Params.FeatureFlags, "FileRoots") || !hasFlag(c.Params.FeatureFlags, "BoundLocations") || !hasFlag(c.Params.FeatureFlags, "Freshness") {
		t.Fatalf("init made flags %v, want every format-2 content feature", c.Params.FeatureFlags)
	}
	mk := content.NewRootsSuite
	if hasFlag(c.Params.FeatureFlags, "CompactRoots") {
		mk = content.NewCompactRootsSuite // init's default (§16)
	}
	s, err := mk(content.Algorithm(c.Params.Cipher), c.Params.ChunkSize, make([]byte, 32), make([]byte, 32))
	must(t, err)
	return s
}

// storedAs reads backing file p, failing unless its size is what the
// layout gives for plain bytes of plaintext (so that the offsets the
// attack uses are the file's).
func storedAs(t *testing.T, s *content.Suite, p string, plain int64) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	if int64(len(b)) != s.CipherSize(plain) {
		t.Fatalf("backing file of %d bytes, the layout gives %d for %d plaintext bytes", len(b), s.CipherSize(plain), plain)
	}
	return b
}

// putBack replaces backing file p by data, as the storage does.
func putBack(t *testing.T, p string, data []byte) {
	t.Helper()
	must(t, os.Chmod(p, 0o600))
	must(t, os.WriteFile(p, data, 0o600))
}

// appendTo is `>>`.
func appendTo(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// writeAt is dd conv=notrunc seek=off.
func writeAt(p string, data []byte, off int64) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, off)
	return errors.Join(err, f.Close())
}

// wantEIO mounts the vault and reads name: the read must fail with EIO,
// and whatever it returned before failing must be a prefix of current,
// what the device last wrote (never old or garbage bytes).
func (v *tamperVault) wantEIO(t *testing.T, name string, current []byte) {
	t.Helper()
	v.mount(t)
	defer v.unmount(t)
	got, err := os.ReadFile(v.path(name))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("read %s through the mount: %d bytes, %v; want EIO", name, len(got), err)
	}
	if !bytes.HasPrefix(current, got) {
		t.Fatalf("read %s through the mount returned %d bytes the device never wrote there before its EIO: %.64q", name, len(got), got)
	}
}

// wantReported: freshness status is not OK at once (behind 27 or rolled
// back 28) and lists an issue on a path with prefix path; past the grace period it is rolled back (28),
// as vault's wantReported wants. A strict mount refuses the vault (28)
// when status says rolled back at once; when status says behind, the
// strict mount goes on (what a sync in flight could explain is not
// refused before the grace period) and its one freshness line says so.
func (v *tamperVault) wantReported(t *testing.T, path string) {
	t.Helper()
	status := func(args ...string) result {
		return run(t, "", append(append([]string{"freshness", "status", "--passfile", v.pf}, args...), v.dir)...)
	}
	issue := func(kind string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^\s+` + kind + `: ` + regexp.QuoteMeta(path))
	}
	now := status()
	kind := "rolled back"
	if now.code == ExitFreshBehind {
		now.want(t, ExitFreshBehind)
		kind = "behind"
	} else {
		now.want(t, ExitFreshRolledBack)
	}
	if !issue(kind).MatchString(now.stdout) {
		t.Fatalf("status (exit %d) has no %s issue on %s:\n%s", now.code, kind, path, now.stdout)
	}
	later := status("--grace", "1ns")
	later.want(t, ExitFreshRolledBack)
	if !issue("rolled back").MatchString(later.stdout) {
		t.Fatalf("status past the grace period has no rolled-back issue on %s:\n%s", path, later.stdout)
	}
	r := run(t, "", "mount", "--passfile", v.pf, "--freshness", "strict", v.dir, v.mnt)
	if now.code == ExitFreshRolledBack {
		r.want(t, ExitFreshRolledBack)
		if isMounted(t, v.mnt) {
			t.Fatal("the refused strict mount is mounted")
		}
		return
	}
	r.want(t, 0)
	v.unmount(t)
	if !strings.Contains(r.stderr, "is behind") {
		t.Fatalf("the strict mount of a behind vault does not say so:\n%s", r.stderr)
	}
}

// onlyUserXattr is the one user.* xattr of backing file p.
func onlyUserXattr(t *testing.T, p string) string {
	t.Helper()
	buf := make([]byte, 4096)
	n, err := unix.Listxattr(p, buf)
	must(t, err)
	var user []string
	for _, x := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if strings.HasPrefix(x, "user.") {
			user = append(user, x)
		}
	}
	if len(user) != 1 {
		t.Fatalf("backing xattrs %q, want one", user)
	}
	return user[0]
}

// spliceStored copies stored chunk i and its tag-block entry from src
// over dst (the backing bytes of one roots file), as vault's spliceChunk.
func spliceStored(s *content.Suite, dst, src []byte, i int) {
	off, n := s.ChunkOffset(uint64(i)), int64(s.CipherChunkSize())
	copy(dst[off:off+n], src[off:off+n])
	e := s.EntryOffset(uint64(i))
	copy(dst[e:e+content.TagSize], src[e:e+content.TagSize])
}

// tamperMountAttacks are vault.tamperV2Attacks through the mount, by the
// same names.
var tamperMountAttacks = map[string]func(t *testing.T, v *tamperVault){
	"dirid-copy": func(t *testing.T, v *tamperVault) {
		v.mount(t)
		must(t, os.Mkdir(v.path("A"), 0o700))
		must(t, os.Mkdir(v.path("B"), 0o700))
		must(t, os.WriteFile(v.path("A/secret"), []byte("in A"), 0o600))
		v.unmount(t)
		a, b, entry := v.backing(t, "A"), v.backing(t, "B"), v.backing(t, "A/secret")
		aID, err := os.ReadFile(filepath.Join(a, names.DirIDFile))
		must(t, err)
		putBack(t, filepath.Join(b, names.DirIDFile), aID)
		must(t, os.Rename(entry, filepath.Join(b, filepath.Base(entry))))
		v.wantEIO(t, "B/secret", nil)
	},
	"chunk-splice-two-versions": func(t *testing.T, v *tamperVault) {
		s := v.geometry(t)
		cs := s.ChunkSize()
		v.mount(t)
		must(t, os.WriteFile(v.path("f"), bytes.Repeat([]byte{'a'}, 3*cs), 0o600))
		v.unmount(t)
		p := v.backing(t, "f")
		old := storedAs(t, s, p, int64(3*cs))
		v.mount(t)
		must(t, writeAt(v.path("f"), bytes.Repeat([]byte{'b'}, 2*cs), 0))
		v.unmount(t)
		cur := storedAs(t, s, p, int64(3*cs))
		spliceStored(s, cur, old, 1)
		putBack(t, p, cur)
		v.wantEIO(t, "f", append(bytes.Repeat([]byte{'b'}, 2*cs), bytes.Repeat([]byte{'a'}, cs)...))
	},
	"header-only-truncation": func(t *testing.T, v *tamperVault) {
		s := v.geometry(t)
		data := bytes.Repeat([]byte{'x'}, 10000)
		v.mount(t)
		must(t, os.WriteFile(v.path("f"), data[:4000], 0o600))
		must(t, appendTo(v.path("f"), data[4000:]))
		v.unmount(t)
		p := v.backing(t, "f")
		storedAs(t, s, p, int64(len(data)))
		must(t, os.Truncate(p, int64(s.HeaderSize())))
		v.wantEIO(t, "f", data)
	},
	"zero-chunk-in-sparse-file": func(t *testing.T, v *tamperVault) {
		s := v.geometry(t)
		cs := s.ChunkSize()
		v.mount(t)
		must(t, os.WriteFile(v.path("f"), nil, 0o600))
		must(t, writeAt(v.path("f"), bytes.Repeat([]byte{'x'}, cs), 0))
		must(t, writeAt(v.path("f"), []byte("end"), int64(3*cs))) // chunks 1, 2: holes
		v.unmount(t)
		p := v.backing(t, "f")
		cur := storedAs(t, s, p, int64(3*cs+3))
		off, n := s.ChunkOffset(0), int64(s.CipherChunkSize())
		clear(cur[off : off+n])
		e := s.EntryOffset(0)
		clear(cur[e : e+content.TagSize])
		putBack(t, p, cur)
		want := make([]byte, 3*cs+3)
		copy(want, bytes.Repeat([]byte{'x'}, cs))
		copy(want[3*cs:], "end")
		v.wantEIO(t, "f", want)
	},
	"xattr-deletion": func(t *testing.T, v *tamperVault) {
		v.mount(t)
		must(t, os.WriteFile(v.path("f"), []byte("data"), 0o600))
		must(t, unix.Setxattr(v.path("f"), "user.tag", []byte("v1"), 0))
		v.unmount(t)
		p := v.backing(t, "f")
		must(t, unix.Removexattr(p, onlyUserXattr(t, p)))
		v.wantReported(t, "/f:")
	},
	"xattr-rollback": func(t *testing.T, v *tamperVault) {
		v.mount(t)
		must(t, os.WriteFile(v.path("f"), []byte("data"), 0o600))
		must(t, unix.Setxattr(v.path("f"), "user.tag", []byte("old"), 0))
		v.unmount(t) // the old value is recorded
		p := v.backing(t, "f")
		name := onlyUserXattr(t, p)
		buf := make([]byte, 1<<16)
		n, err := unix.Getxattr(p, name, buf)
		must(t, err)
		oldVal := bytes.Clone(buf[:n])
		v.mount(t)
		must(t, unix.Setxattr(v.path("f"), "user.tag", []byte("new"), 0))
		v.unmount(t)
		if now := onlyUserXattr(t, p); now != name {
			t.Fatalf("the backing xattr is %q after the new value, was %q", now, name)
		}
		must(t, unix.Setxattr(p, name, oldVal, 0))
		v.wantReported(t, "/f:")
	},
	"whole-file-rollback": func(t *testing.T, v *tamperVault) {
		v.mount(t)
		must(t, os.WriteFile(v.path("f"), []byte("version 1"), 0o600))
		v.unmount(t)
		p := v.backing(t, "f")
		old, err := os.ReadFile(p)
		must(t, err)
		v.mount(t)
		must(t, os.WriteFile(v.path("f"), []byte("version 2, longer"), 0o600))
		v.unmount(t)
		putBack(t, p, old)
		v.wantReported(t, "/f:")
	},
	"file-deletion": func(t *testing.T, v *tamperVault) {
		v.mount(t)
		must(t, os.WriteFile(v.path("keep"), []byte("keep"), 0o600))
		must(t, os.WriteFile(v.path("gone"), []byte("gone"), 0o600))
		v.unmount(t)
		must(t, os.Remove(v.backing(t, "gone")))
		v.wantReported(t, "/gone:")
	},
	"directory-rollback": func(t *testing.T, v *tamperVault) {
		v.mount(t)
		must(t, os.Mkdir(v.path("d"), 0o700))
		must(t, os.WriteFile(v.path("d/old"), []byte("old"), 0o600))
		v.unmount(t)
		bd := v.backing(t, "d")
		snap := filepath.Join(t.TempDir(), "snap")
		cpA(t, bd, snap) // nothing of the mount is open: unmounted
		v.mount(t)
		must(t, os.Remove(v.path("d/old")))
		// An editor's save: written beside, renamed over the name.
		must(t, os.WriteFile(v.path("d/.new.swp"), []byte("new"), 0o600))
		must(t, os.Rename(v.path("d/.new.swp"), v.path("d/new")))
		v.unmount(t)
		must(t, os.RemoveAll(bd))
		cpA(t, snap, bd)
		v.wantReported(t, "/d/")
	},
	"file-swap-in-directory": func(t *testing.T, v *tamperVault) {
		v.mount(t)
		must(t, os.WriteFile(v.path("a"), []byte("contents of a"), 0o600))
		must(t, os.WriteFile(v.path("b"), []byte("contents of b"), 0o600))
		v.unmount(t)
		pa, pb := v.backing(t, "a"), v.backing(t, "b")
		must(t, unix.Renameat2(unix.AT_FDCWD, pa, unix.AT_FDCWD, pb, unix.RENAME_EXCHANGE))
		v.wantEIO(t, "a", []byte("contents of a"))
		v.wantEIO(t, "b", []byte("contents of b"))
	},
	"chunk-swap-within-file": func(t *testing.T, v *tamperVault) {
		s := v.geometry(t)
		cs := s.ChunkSize()
		data := []byte(strings.Repeat("0", cs) + strings.Repeat("1", cs) + "z")
		v.mount(t)
		must(t, os.WriteFile(v.path("f"), data, 0o600))
		v.unmount(t)
		p := v.backing(t, "f")
		orig := storedAs(t, s, p, int64(len(data)))
		cur := bytes.Clone(orig)
		o0, o1, n := s.ChunkOffset(0), s.ChunkOffset(1), int64(s.CipherChunkSize())
		copy(cur[o0:o0+n], orig[o1:o1+n])
		copy(cur[o1:o1+n], orig[o0:o0+n])
		putBack(t, p, cur)
		v.wantEIO(t, "f", data)
	},
	"chunk-from-other-file": func(t *testing.T, v *tamperVault) {
		s := v.geometry(t)
		cs := s.ChunkSize()
		q := bytes.Repeat([]byte{'q'}, 2*cs)
		v.mount(t)
		must(t, os.WriteFile(v.path("p"), bytes.Repeat([]byte{'p'}, 2*cs), 0o600))
		// q written longer, then cut back (truncate) to its 2 chunks.
		must(t, os.WriteFile(v.path("q"), append(bytes.Clone(q), "tail"...), 0o600))
		must(t, unix.Truncate(v.path("q"), int64(len(q))))
		v.unmount(t)
		pq := v.backing(t, "q")
		cur := storedAs(t, s, pq, int64(2*cs))
		spliceStored(s, cur, storedAs(t, s, v.backing(t, "p"), int64(2*cs)), 0)
		putBack(t, pq, cur)
		v.wantEIO(t, "q", q)
	},
}

// TestTamperMount runs the tamper suite through a real mount, on the
// transport ENCRYPTFS_TRANSPORT selects.
func TestTamperMount(t *testing.T) {
	fstest.RequireFUSE(t)
	for name, attack := range tamperMountAttacks {
		t.Run(name, func(t *testing.T) { attack(t, newTamperVault(t)) })
	}
}

// TestTamperMountSuiteMatches: every attack of vault.tamperV2Attacks
// (read from its source) has its run through the mount here, and this
// suite has no attack the vault's does not.
func TestTamperMountSuiteMatches(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "vault", "tamper_full_test.go"))
	must(t, err)
	block := regexp.MustCompile(`(?s)\nvar tamperV2Attacks = map\[string\]func\(t \*testing\.T\)\{\n(.*?)\n\}\n`).FindSubmatch(src)
	if block == nil {
		t.Fatal("no tamperV2Attacks map in vault/tamper_full_test.go; the pattern no longer matches")
	}
	attacks := regexp.MustCompile(`(?m)^\t"([^"]+)": func\(`).FindAllSubmatch(block[1], -1)
	if len(attacks) < 10 {
		t.Fatalf("found %d attacks in tamperV2Attacks; the pattern no longer matches", len(attacks))
	}
	inVault := map[string]bool{}
	for _, m := range attacks {
		name := string(m[1])
		inVault[name] = true
		if _, ok := tamperMountAttacks[name]; !ok {
			t.Errorf("vault attack %q has no run through the mount in tamperMountAttacks", name)
		}
	}
	for name := range tamperMountAttacks {
		if !inVault[name] {
			t.Errorf("tamperMountAttacks has %q, which vault's tamperV2Attacks does not", name)
		}
	}
}
