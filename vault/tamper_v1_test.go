package vault

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/fsck"
	"golang.org/x/sys/unix"
)

// TestTamperV1 runs each storage attack of docs/format.md §11 (and the
// chunk moves that v1 does detect) on a v1 vault, by editing CIPHERDIR
// directly, and asserts the outcome §11 documents for v1. An attack listed
// as "not detected" is asserted to succeed: if one starts failing, v1's
// behaviour changed and §11 must change with it. This is the v1 half of the
// tamper suite; a v2 format that authenticates containers runs the same
// attacks and expects each to be detected.
func TestTamperV1(t *testing.T) {
	// §11 "Directory IDs": A's encryptfs.dirid copied into B. Reads do not
	// notice (an entry moved from A to B decrypts in B); fsck reports both
	// directories as sharing one ID.
	t.Run("dirid-copy", func(t *testing.T) {
		v, dir := newTestVault(t)
		for _, d := range []string{"A", "B"} {
			if err := v.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := v.WriteFile("A/secret", []byte("in A"), 0o600); err != nil {
			t.Fatal(err)
		}
		a, b := backingPath(t, v, dir, "A"), backingPath(t, v, dir, "B")
		entry := backingPath(t, v, dir, "A/secret")
		id, err := os.ReadFile(filepath.Join(a, names.DirIDFile))
		if err != nil {
			t.Fatal(err)
		}
		replaceFile(t, filepath.Join(b, names.DirIDFile), id)
		if err := os.Rename(entry, filepath.Join(b, filepath.Base(entry))); err != nil {
			t.Fatal(err)
		}
		if got, err := v.ReadFile("B/secret"); err != nil || string(got) != "in A" {
			t.Fatalf("v1 documents the moved entry as readable in B: %q, %v", got, err)
		}
		rep, err := fsck.Check(context.Background(), v.sess, fsck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var dups []fsck.Problem
		for _, p := range rep.Problems {
			if p.Kind == fsck.KindDupDirID {
				dups = append(dups, p)
			}
		}
		// The walk meets A and B in backing-name order, which is random.
		sort.Slice(dups, func(i, j int) bool { return dups[i].PlainPath < dups[j].PlainPath })
		if len(dups) != 2 || dups[0].PlainPath != "/A" || dups[1].PlainPath != "/B" ||
			!strings.Contains(dups[0].Detail, "(/B)") || !strings.Contains(dups[1].Detail, "(/A)") {
			t.Fatalf("fsck does not report A and B as sharing a directory ID: %+v", rep.Problems)
		}
	})

	// §11 "Chunk splice across versions": chunk 1 of an older version put
	// back into a newer version of the same file reads cleanly, a mix of
	// both versions. Not detected in v1 (documented limit).
	t.Run("chunk-splice-two-versions", func(t *testing.T) {
		v, dir := newTestVault(t)
		cs := v.sess.Engine().Suite().ChunkSize()
		old := bytes.Repeat([]byte{'a'}, 3*cs)
		if err := v.WriteFile("f", old, 0o600); err != nil {
			t.Fatal(err)
		}
		p := backingPath(t, v, dir, "f")
		oldBacking := readFile(t, p)
		f, err := v.OpenFile("f", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(bytes.Repeat([]byte{'b'}, 2*cs), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		cur := readFile(t, p)
		if !bytes.Equal(cur[:content.HeaderSize], oldBacking[:content.HeaderSize]) {
			t.Fatal("the rewrite changed the header: not two versions of one file")
		}
		copyChunk(t, v, cur, oldBacking, 1, 1)
		replaceFile(t, p, cur)
		want := append(append(bytes.Repeat([]byte{'b'}, cs), bytes.Repeat([]byte{'a'}, cs)...), bytes.Repeat([]byte{'a'}, cs)...)
		if got, err := v.ReadFile("f"); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("v1 documents the spliced file as reading cleanly: %d bytes, %v", len(got), err)
		}
	})

	// §11 "Header-only truncation": a backing file cut to its 36-byte
	// header reads as an empty file. Not detected in v1.
	t.Run("header-only-truncation", func(t *testing.T) {
		v, dir := newTestVault(t)
		if err := v.WriteFile("f", bytes.Repeat([]byte{'x'}, 10000), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(backingPath(t, v, dir, "f"), content.HeaderSize); err != nil {
			t.Fatal(err)
		}
		if got, err := v.ReadFile("f"); err != nil || len(got) != 0 {
			t.Fatalf("v1 documents a header-only file as empty: %d bytes, %v", len(got), err)
		}
	})

	// §11 "Xattr deletion and rollback": removing a backing xattr removes
	// the plaintext one; an older sealed value written back shows the
	// older value. Not detected in v1.
	t.Run("xattr-deletion", func(t *testing.T) {
		v, dir := newTestVault(t)
		if err := v.WriteFile("f", []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := v.SetXattr("f", "user.tag", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		p := backingPath(t, v, dir, "f")
		if err := unix.Removexattr(p, onlyBackingXattr(t, p)); err != nil {
			t.Fatal(err)
		}
		if _, err := v.GetXattr("f", "user.tag"); !errors.Is(err, unix.ENODATA) {
			t.Fatalf("v1 documents a deleted xattr as simply absent: %v", err)
		}
		if list, err := v.ListXattr("f"); err != nil || len(list) != 0 {
			t.Fatalf("list after deletion: %q, %v", list, err)
		}
	})
	t.Run("xattr-rollback", func(t *testing.T) {
		v, dir := newTestVault(t)
		if err := v.WriteFile("f", []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := v.SetXattr("f", "user.tag", []byte("old")); err != nil {
			t.Fatal(err)
		}
		p := backingPath(t, v, dir, "f")
		name := onlyBackingXattr(t, p)
		oldVal := getBackingXattr(t, p, name)
		if err := v.SetXattr("f", "user.tag", []byte("new")); err != nil {
			t.Fatal(err)
		}
		if err := unix.Setxattr(p, name, oldVal, 0); err != nil {
			t.Fatal(err)
		}
		if got, err := v.GetXattr("f", "user.tag"); err != nil || string(got) != "old" {
			t.Fatalf("v1 documents a rolled-back xattr as reading the old value: %q, %v", got, err)
		}
	})

	// §11 "Whole-file rollback": the whole backing file replaced by an
	// older copy of itself reads as the older version. Not detected.
	t.Run("whole-file-rollback", func(t *testing.T) {
		v, dir := newTestVault(t)
		if err := v.WriteFile("f", []byte("version 1"), 0o600); err != nil {
			t.Fatal(err)
		}
		p := backingPath(t, v, dir, "f")
		old := readFile(t, p)
		if err := v.WriteFile("f", []byte("version 2, longer"), 0o600); err != nil {
			t.Fatal(err)
		}
		replaceFile(t, p, old)
		if got, err := v.ReadFile("f"); err != nil || string(got) != "version 1" {
			t.Fatalf("v1 documents a rolled-back file as reading the old version: %q, %v", got, err)
		}
	})

	// §11 "Deletion": a backing file removed by the storage is simply
	// absent; the directory lists without it and fsck finds nothing wrong.
	// Not detected.
	t.Run("file-deletion", func(t *testing.T) {
		v, dir := newTestVault(t)
		for _, n := range []string{"keep", "gone"} {
			if err := v.WriteFile(n, []byte(n), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Remove(backingPath(t, v, dir, "gone")); err != nil {
			t.Fatal(err)
		}
		if got := listNames(t, v, "."); strings.Join(got, ",") != "keep" {
			t.Fatalf("v1 documents a deleted file as silently absent: lists %q", got)
		}
		if _, err := v.Stat("gone"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("deleted file: %v, want not-exist", err)
		}
		assertFsckClean(t, v)
	})

	// §11 "Rollback" of a directory: the backing directory replaced by an
	// older copy of itself (its set of entries as it was) lists the old
	// set, a removed entry back and a new one gone. Not detected.
	t.Run("directory-rollback", func(t *testing.T) {
		v, dir := newTestVault(t)
		if err := v.Mkdir("d", 0o700); err != nil {
			t.Fatal(err)
		}
		if err := v.WriteFile("d/old", []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		bd := backingPath(t, v, dir, "d")
		snap := filepath.Join(t.TempDir(), "snap")
		if out, err := exec.Command("cp", "-a", bd, snap).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
		if err := v.Remove("d/old"); err != nil {
			t.Fatal(err)
		}
		if err := v.WriteFile("d/new", []byte("new"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(bd); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-a", snap, bd).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
		if got := listNames(t, v, "d"); strings.Join(got, ",") != "old" {
			t.Fatalf("v1 documents a rolled-back directory as listing its old entries: %q", got)
		}
		if got, err := v.ReadFile("d/old"); err != nil || string(got) != "old" {
			t.Fatalf("rolled-back entry: %q, %v", got, err)
		}
		assertFsckClean(t, v)
	})

	// §11 "Location (entry swap)": two files' backing names swapped in one
	// directory: names and contents swap together. Not detected.
	t.Run("file-swap-in-directory", func(t *testing.T) {
		v, dir := newTestVault(t)
		if err := v.WriteFile("a", []byte("contents of a"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := v.WriteFile("b", []byte("contents of b"), 0o600); err != nil {
			t.Fatal(err)
		}
		pa, pb := backingPath(t, v, dir, "a"), backingPath(t, v, dir, "b")
		if err := unix.Renameat2(unix.AT_FDCWD, pa, unix.AT_FDCWD, pb, unix.RENAME_EXCHANGE); err != nil {
			t.Fatal(err)
		}
		if got, err := v.ReadFile("a"); err != nil || string(got) != "contents of b" {
			t.Fatalf("v1 documents a swap as undetected: a reads %q, %v", got, err)
		}
	})

	// §11 "Chunk splice across versions", detected part: a chunk moved to
	// another index of its own file fails authentication (index in the AD).
	t.Run("chunk-swap-within-file", func(t *testing.T) {
		v, dir := newTestVault(t)
		cs := v.sess.Engine().Suite().ChunkSize()
		data := append(bytes.Repeat([]byte{'0'}, cs), bytes.Repeat([]byte{'1'}, cs)...)
		data = append(data, 'z') // chunk 2 is the final one
		if err := v.WriteFile("f", data, 0o600); err != nil {
			t.Fatal(err)
		}
		p := backingPath(t, v, dir, "f")
		orig := readFile(t, p)
		cur := bytes.Clone(orig)
		copyChunk(t, v, cur, orig, 0, 1)
		copyChunk(t, v, cur, orig, 1, 0)
		replaceFile(t, p, cur)
		if _, err := v.ReadFile("f"); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("chunk swap within a file: %v, want ErrCorrupt", err)
		}
	})

	// §11 "Chunk splice across versions", detected part: a chunk taken
	// from another file fails authentication (fileID key and AD).
	t.Run("chunk-from-other-file", func(t *testing.T) {
		v, dir := newTestVault(t)
		cs := v.sess.Engine().Suite().ChunkSize()
		for _, n := range []string{"p", "q"} {
			if err := v.WriteFile(n, bytes.Repeat([]byte(n), 2*cs), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		pq := backingPath(t, v, dir, "q")
		cur := readFile(t, pq)
		copyChunk(t, v, cur, readFile(t, backingPath(t, v, dir, "p")), 0, 0)
		replaceFile(t, pq, cur)
		if _, err := v.ReadFile("q"); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("chunk from another file: %v, want ErrCorrupt", err)
		}
	})
}

// listNames lists directory name of v, sorted.
func listNames(t *testing.T, v *Vault, name string) []string {
	t.Helper()
	ents, err := v.ReadDir(name)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	sort.Strings(got)
	return got
}

// assertFsckClean fails unless fsck reports no problem: the attack left
// nothing a v1 check could see.
func assertFsckClean(t *testing.T, v *Vault) {
	t.Helper()
	rep, err := fsck.Check(context.Background(), v.sess, fsck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Fatalf("v1 documents this attack as invisible to fsck, which reports %+v", rep.Problems)
	}
}

// backingPath is the absolute backing path of plaintext name.
func backingPath(t *testing.T, v *Vault, dir, name string) string {
	t.Helper()
	rel, err := v.EncryptPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, rel)
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replaceFile overwrites backing file p with data (in place: same inode,
// mode kept), as an attacker with write access to CIPHERDIR would.
func replaceFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// copyChunk copies ciphertext chunk from of src over chunk to of dst. Both
// chunks must be full (not the final, shorter one).
func copyChunk(t *testing.T, v *Vault, dst, src []byte, to, from int) {
	t.Helper()
	ccs := v.sess.Engine().Suite().CipherChunkSize()
	so, do := content.HeaderSize+from*ccs, content.HeaderSize+to*ccs
	if so+ccs > len(src) || do+ccs > len(dst) {
		t.Fatalf("chunk %d or %d out of range", from, to)
	}
	copy(dst[do:do+ccs], src[so:so+ccs])
}

// onlyBackingXattr returns the one user.* xattr of backing file p.
func onlyBackingXattr(t *testing.T, p string) string {
	t.Helper()
	buf := make([]byte, 4096)
	n, err := unix.Listxattr(p, buf)
	if err != nil {
		t.Fatal(err)
	}
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

func getBackingXattr(t *testing.T, p, name string) []byte {
	t.Helper()
	buf := make([]byte, 1<<16)
	n, err := unix.Getxattr(p, name, buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}
