package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fstest"
	"golang.org/x/sys/unix"
)

// TestUpgradeCompactCLI: a vault made with file roots in the layout of
// before CompactRoots (init --compact-roots=false, 4 KiB chunks) holding
// empty, 1-, 2-, 17- and 300-chunk files, a sparse file (holes in group
// 0 and a chunk in group 2), a file of two and one of three names, an
// xattr, and a DIRTY file (a foreground mount killed while it was open
// for writing: fsck says dirty-root), gets CompactRoots from upgrade:
// through a mount every file reads the same, the xattr and the links are
// there, a 1-chunk file shrinks to its compact size (a tag block less),
// fsck is clean, freshness status is OK (headers kept: gens only grew),
// and a second upgrade says up to date.
func TestUpgradeCompactCLI(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw", "--format", "2", "--compact-roots=false", "--chunk-size", "4k")
	pf := writePassfile(t, "pw")
	if c, err := config.Load(dir); err != nil || !c.Params.Has(config.FlagFileRoots) || c.Params.Has(config.FlagCompactRoots) {
		t.Fatalf("init --compact-roots=false: %v, %v", err, c)
	}
	const cs = 4096
	body := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = seed + byte(i/cs) + byte(i%251)
		}
		return b
	}
	files := map[string][]byte{
		"empty":   nil,
		"one":     body(100, 1),
		"two":     body(cs+10, 2),
		"c17":     body(17*cs+5, 3),
		"c300":    body(300*cs+7, 4),
		"d/pair":  body(3*cs, 5),
		"d/tri":   body(20*cs+1, 6),
		"d/dirty": body(5*cs, 7),
	}
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	must(t, os.MkdirAll(filepath.Join(mnt, "d/e"), 0o755))
	for name, b := range files {
		must(t, os.WriteFile(filepath.Join(mnt, name), b, 0o640))
	}
	sp, err := os.Create(filepath.Join(mnt, "sparse"))
	must(t, err)
	for _, w := range []struct {
		at   int64
		data string
	}{{0, "head"}, {5 * cs, "in group 0"}, {600 * cs, "tail in group 2"}} {
		_, err := sp.WriteAt([]byte(w.data), w.at)
		must(t, err)
	}
	must(t, sp.Close())
	must(t, os.Link(filepath.Join(mnt, "d/pair"), filepath.Join(mnt, "pair-too")))
	must(t, os.Link(filepath.Join(mnt, "d/tri"), filepath.Join(mnt, "tri-2")))
	must(t, os.Link(filepath.Join(mnt, "d/tri"), filepath.Join(mnt, "d/e/tri-3")))
	must(t, unix.Setxattr(filepath.Join(mnt, "two"), "user.color", []byte("blue"), 0))
	run(t, "", "unmount", mnt).want(t, 0)
	oneBacking := filepath.Join(dir, backingOf(t, dir, pf, "one"))
	before, err := os.Stat(oneBacking)
	must(t, err)

	// A crash while d/dirty is open for writing: its header stays DIRTY.
	fg := exec.Command(binary, "mount", "-f", "--passfile", pf, dir, mnt)
	must(t, fg.Start())
	waitFor(t, "the foreground mount", func() bool { return isMounted(t, mnt) })
	f, err := os.OpenFile(filepath.Join(mnt, "d/dirty"), os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt([]byte("written, never closed"), 2*cs+7)
	must(t, err)
	must(t, fg.Process.Signal(syscall.SIGKILL))
	fg.Wait()
	f.Close()
	must(t, unmount(mnt, true))
	if r := run(t, "", "fsck", "--passfile", pf, dir); !strings.Contains(r.stdout+r.stderr, "dirty-root") {
		t.Fatalf("fsck before the upgrade (exit %d) does not see the DIRTY file:\n%s%s", r.code, r.stdout, r.stderr)
	}
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	want := readMountTree(t, mnt)
	run(t, "", "unmount", mnt).want(t, 0)
	if !bytes.Contains([]byte(want["d/dirty"]), []byte("written, never closed")) || want["c300"] != string(files["c300"]) || want["sparse"][600*cs:] != "tail in group 2" {
		t.Fatal("the vault before the upgrade does not read as written")
	}

	r := run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "compact layout") || !strings.Contains(r.stdout, "1 of them DIRTY") {
		t.Fatalf("upgrade said:\n%s", r.stdout)
	}
	wantFlags(t, dir, "BoundLocations", "FileRoots", "CompactRoots", "Freshness")
	if after, err := os.Stat(oneBacking); err != nil || after.Size() != before.Size()-4096 || after.Size() != 128+100+32 {
		t.Fatalf("a 1-chunk file after the upgrade: %v, %v (was %d bytes)", after.Size(), err, before.Size())
	}

	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	got := readMountTree(t, mnt)
	var v [8]byte
	n, xerr := unix.Getxattr(filepath.Join(mnt, "two"), "user.color", v[:])
	var st1, st2, st3 unix.Stat_t
	must(t, unix.Stat(filepath.Join(mnt, "d/tri"), &st1))
	must(t, unix.Stat(filepath.Join(mnt, "d/e/tri-3"), &st2))
	must(t, unix.Stat(filepath.Join(mnt, "pair-too"), &st3))
	run(t, "", "unmount", mnt).want(t, 0)
	sameMountTree(t, "the compacted vault", got, want)
	if xerr != nil || string(v[:n]) != "blue" {
		t.Fatalf("xattr after the upgrade: %q, %v", v[:n], xerr)
	}
	if st1.Ino != st2.Ino || st1.Nlink != 3 || st3.Nlink != 2 {
		t.Fatalf("hard links after the upgrade: inodes %d %d, nlink %d and %d", st1.Ino, st2.Ino, st1.Nlink, st3.Nlink)
	}

	run(t, "", "fsck", "--passfile", pf, dir).want(t, 0)
	r = run(t, "", "freshness", "status", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "freshness: OK") {
		t.Fatalf("freshness status after the upgrade:\n%s", r.stdout)
	}
	r = run(t, "", "upgrade", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "up to date") {
		t.Fatalf("a second upgrade said:\n%s", r.stdout)
	}
}
