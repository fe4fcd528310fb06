package fsck

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

func TestSalvageCleanVault(t *testing.T) {
	fx := newFixture(t)
	// A hard link and a fifo, made on the backing side under encrypted names.
	root := fx.rootID(t)
	hl, err := fx.tree.Name(root, "hardlink")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Link(fx.abs(t, pSmall), filepath.Join(fx.dir, hl.Backing)); err != nil {
		t.Fatal(err)
	}
	fifo, err := fx.tree.Name(root, "fifo")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(fx.dir, fifo.Backing), 0o640); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, fx.dir)
	dest := filepath.Join(t.TempDir(), "out")
	rep := fx.check(t, Options{Salvage: dest})
	if !rep.Clean || len(rep.SalvageErrors) > 0 {
		t.Fatalf("problems %+v, salvage errors %v", rep.Problems, rep.SalvageErrors)
	}
	if rep.Summary.Files != 7 || rep.Summary.Others != 1 {
		t.Errorf("summary %+v (hard link counted twice?)", rep.Summary)
	}
	if after := snapshot(t, fx.dir); !equalMaps(before, after) {
		t.Error("salvage changed the vault")
	}

	for p, data := range fx.files {
		got, err := os.ReadFile(filepath.Join(dest, p))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %v, equal %v", p, err, bytes.Equal(got, data))
		}
		sameMeta(t, fx.abs(t, p), filepath.Join(dest, p))
	}
	for _, p := range []string{pDir, pSub} {
		sameMeta(t, fx.abs(t, p), filepath.Join(dest, p))
	}
	var a, b unix.Stat_t
	if err := unix.Stat(filepath.Join(dest, pSmall), &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(filepath.Join(dest, "hardlink"), &b); err != nil || a.Ino != b.Ino {
		t.Errorf("hardlink not linked in salvage: %v", err)
	}
	if err := unix.Lstat(filepath.Join(dest, "fifo"), &a); err != nil || a.Mode&unix.S_IFMT != unix.S_IFIFO || a.Mode&0o777 != 0o640 {
		t.Errorf("fifo: mode %o, %v", a.Mode, err)
	}
	for p, want := range map[string]string{pLink: "target/path", pLongLink: strings.Repeat("t/", 1600)} {
		if got, err := os.Readlink(filepath.Join(dest, p)); err != nil || got != want {
			t.Errorf("%s: %q, %v", p, got, err)
		}
		sameMeta(t, fx.abs(t, p), filepath.Join(dest, p))
	}
	for p, want := range map[string]string{pSmall + "\x00user.color": "blue", pDir + "\x00user.dirattr": "d"} {
		path, name, _ := strings.Cut(p, "\x00")
		buf := make([]byte, 64)
		n, err := unix.Lgetxattr(filepath.Join(dest, path), name, buf)
		if err != nil || string(buf[:n]) != want {
			t.Errorf("xattr %s of %s: %q, %v", name, path, buf[:max(n, 0)], err)
		}
	}
	report, err := os.ReadFile(filepath.Join(dest, SalvageReportName))
	if err != nil || !strings.Contains(string(report), ": clean; salvaged into") {
		t.Errorf("report %q, %v", report, err)
	}
}

// sameMeta compares the mode and mtime of a backing entry and its copy.
func sameMeta(t *testing.T, backingPath, copyPath string) {
	t.Helper()
	var a, b unix.Stat_t
	if err := unix.Lstat(backingPath, &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lstat(copyPath, &b); err != nil {
		t.Errorf("copy: %v", err)
		return
	}
	if a.Mode != b.Mode || a.Mtim != b.Mtim {
		t.Errorf("%s: mode %o mtime %v, copy has %o %v", copyPath, a.Mode, a.Mtim, b.Mode, b.Mtim)
	}
}

func (fx *fixture) rootID(t *testing.T) []byte {
	t.Helper()
	id, err := os.ReadFile(filepath.Join(fx.dir, names.DirIDFile))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestSalvageUndecryptable(t *testing.T) {
	fx := newFixture(t)
	// The sub directory loses its ID (file.txt's name is lost), and the
	// dir directory's own name is tampered with (its subtree keeps names).
	fileBacking := filepath.Base(fx.abs(t, pSubFile))
	subBacking := filepath.Base(fx.abs(t, pSub))
	if err := os.Remove(filepath.Join(fx.abs(t, pSub), names.DirIDFile)); err != nil {
		t.Fatal(err)
	}
	dirBacking := fx.backingPath(t, pDir)
	tampered := "A" + dirBacking[1:]
	if tampered == dirBacking {
		tampered = "B" + dirBacking[1:]
	}
	rename(t, filepath.Join(fx.dir, dirBacking), filepath.Join(fx.dir, tampered))

	dest := filepath.Join(t.TempDir(), "out")
	rep := fx.check(t, Options{Salvage: dest})
	want := []problemKey{
		{KindBadName, tampered, ""},
		{KindDirID, tampered + "/" + subBacking + "/" + names.DirIDFile, ""},
	}
	if got := keysOf(rep); !sameKeys(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	undDir := UndecryptablePrefix + tampered
	for p, data := range map[string][]byte{
		undDir + "/other.txt":                                []byte("other"),
		undDir + "/sub/" + UndecryptablePrefix + fileBacking: fx.files[pSubFile],
	} {
		got, err := os.ReadFile(filepath.Join(dest, p))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %v", p, err)
		}
	}
	if rep.Problems[0].SalvagedAs != undDir && rep.Problems[1].SalvagedAs != undDir {
		t.Errorf("SalvagedAs not set: %+v", rep.Problems)
	}
	// The symlinks under the undecryptable dir still decrypt: their own
	// directory's ID and names are intact.
	if got, err := os.Readlink(filepath.Join(dest, undDir, "link")); err != nil || got != "target/path" {
		t.Errorf("link: %q %v", got, err)
	}
}

func TestUndecryptableName(t *testing.T) {
	for _, bn := range []string{"x", strings.Repeat("a", 241), strings.Repeat("b", 255)} {
		n := undecryptableName(bn)
		if len(n) > 255 || !strings.HasPrefix(n, UndecryptablePrefix) {
			t.Errorf("undecryptableName(%d bytes) = %q", len(bn), n)
		}
	}
	if undecryptableName(strings.Repeat("b", 255)) == undecryptableName(strings.Repeat("b", 254)+"c") {
		t.Error("shortened names collide")
	}
}

func TestRootDirIDMissing(t *testing.T) {
	fx := newFixture(t)
	dirBacking := fx.backingPath(t, pDir)
	smallBacking := fx.backingPath(t, pSmall)
	if err := os.Remove(filepath.Join(fx.dir, names.DirIDFile)); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "out")
	rep := fx.check(t, Options{Salvage: dest})
	if got, want := keysOf(rep), []problemKey{{KindDirID, names.DirIDFile, "/"}}; !sameKeys(got, want) {
		t.Fatalf("got %+v", got)
	}
	for p, data := range map[string][]byte{
		UndecryptablePrefix + smallBacking:                 fx.files[pSmall],
		UndecryptablePrefix + dirBacking + "/sub/file.txt": fx.files[pSubFile],
	} {
		if got, err := os.ReadFile(filepath.Join(dest, p)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %v", p, err)
		}
	}
}
