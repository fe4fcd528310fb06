package crashsim_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crashsim"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/tree"
	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/sys/unix"
)

// TestCrashReplayUpgradeCompact replays every crash point of the upgrade
// of a vault with FileRoots in the layout of before CompactRoots: every
// file with chunks is copied into the compact layout beside itself and
// renamed over (hard links relinked to the copy), and CompactRoots is
// written to the config last (docs/format.md §16 "Upgrading"). Every
// crash state opens as before with the same plaintext, or is refused as
// half-upgraded; a second upgrade finishes it (checkUpgradeState: the
// config has CompactRoots, the same plaintext). The crash states between
// the names of a two- and a three-name file are resumed by linking the
// old names to the converted copy. Afterwards the links are one inode
// again, a 1-chunk file has its compact size, and the roots catch a
// spliced chunk.
func TestCrashReplayUpgradeCompact(t *testing.T) {
	dir := t.TempDir()
	pw := []byte("compact upgrade password")
	createRootsNoCompact(t, dir, pw)
	v, err := vault.Open(dir, pw)
	if err != nil {
		t.Fatal(err)
	}
	mustV(v.Mkdir("d1", 0o755))
	mustV(v.Mkdir("d2", 0o755))
	mustV(v.WriteFile("zero", nil, 0o644))
	mustV(v.WriteFile("one", []byte{1}, 0o600))
	mustV(v.WriteFile("d1/two", data(51, 4096+5), 0o644))
	mustV(v.WriteFile("d1/c17", data(52, 17*4096+1), 0o644))
	mustV(v.WriteFile("d2/c260", data(53, 260*4096+3), 0o644))
	mustV(v.WriteFile("d1/pair", data(54, 3*4096+5), 0o644))
	mustV(v.WriteFile("d1/tri", data(55, 5000), 0o644))
	mustV(v.SetXattr("d1/two", "user.color", []byte("green")))
	// Holes in group 0 (chunks 1..4, 6..15) and group 1, data in group 2.
	f, err := v.OpenFile("sparse", os.O_CREATE|os.O_WRONLY, 0o644)
	mustV(err)
	for _, at := range []int64{0, 5 * 4096, 600 * 4096} {
		_, err = f.WriteAt([]byte("data"), at)
		mustV(err)
	}
	mustV(f.Close())
	mustV(v.Close())
	linkInVault(t, dir, pw, "d1/pair", "d2/pair-too")
	linkInVault(t, dir, pw, "d1/tri", "tri-2")
	linkInVault(t, dir, pw, "d1/tri", "d2/tri-3")
	want := plaintextOf(t, dir, pw)
	for _, p := range []string{"d2/pair-too", "d2/tri-3", "d1/two @user.color", "sparse"} {
		if _, ok := want[p]; !ok {
			t.Fatalf("the test vault lacks %s", p)
		}
	}
	oneSize := backingSize(t, dir, pw, "one")

	rec, err := crashsim.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	runUpgrade(t, dir, pw, backing.NewFS(rec), rand.NewChaCha8([32]byte{28}))
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	if got := plaintextOf(t, dir, pw); !equalPlain(got, want) {
		t.Fatalf("after the upgrade: %s", diffPlain(got, want))
	}
	if c, err := config.Load(dir); err != nil || !c.Params.Has(config.FlagCompactRoots) {
		t.Fatalf("after the upgrade the config has no CompactRoots: %v", err)
	}
	if got := backingSize(t, dir, pw, "one"); got != oneSize-content.TagBlockSize || got != content.HeaderSizeV2+1+32 {
		t.Fatalf("a 1-byte file after the upgrade: %d bytes (was %d)", got, oneSize)
	}
	sameInode(t, dir, pw, "d1/pair", "d2/pair-too")
	sameInode(t, dir, pw, "d1/tri", "tri-2", "d2/tri-3")

	replayUpgrade(t, rec, pw, want, "compact conversion")
	checkRootsSplice(t, dir, pw, "d1/c17")
}

// createRootsNoCompact makes a format-2 vault in dir with BoundLocations
// and FileRoots, without CompactRoots (as init --compact-roots=false
// --freshness=false).
func createRootsNoCompact(t *testing.T, dir string, pw []byte) {
	t.Helper()
	r := rand.NewChaCha8([32]byte{27})
	k, err := session.NewKDFParams(r, 1, 8192, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := config.NewParamsV2(string(content.AES256GCM), 4096).WithBoundLocations(bytes.Repeat([]byte{0x6b}, config.VaultIDSize))
	if err == nil {
		p, err = p.WithFeature(config.FlagFileRoots)
	}
	if err != nil {
		t.Fatal(err)
	}
	s, master, err := session.CreateWith(dir, []keyslot.NewSlot{{Type: config.SlotPassword, Label: "password", Password: pw, KDF: k}},
		session.CreateOptions{Params: p, Options: session.Options{Rand: r}})
	if err != nil {
		t.Fatal(err)
	}
	clear(master)
	s.Close()
}

// linkInVault gives file from of the vault in dir the new name to (its
// directory exists), bound as the mount's link binds it
// (tree.Link: the header's second binding, or a links file).
func linkInVault(t *testing.T, dir string, pw []byte, from, to string) {
	t.Helper()
	v, err := vault.Open(dir, pw)
	mustV(err)
	fromDir, err := v.EncryptPath(path.Dir(from))
	mustV(err)
	toDir, err := v.EncryptPath(path.Dir(to))
	mustV(err)
	mustV(v.Close())
	s, err := session.OpenWith(dir, keyslot.Credentials{Password: func() ([]byte, error) { return bytes.Clone(pw), nil }}, session.Options{})
	mustV(err)
	defer s.Close()
	tr := s.Tree()
	open := func(rel string) (int, []byte) {
		fd, err := unix.Open(filepath.Join(dir, rel), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		mustV(err)
		id, _, err := tr.DirIDs().ReadUnchecked(fd)
		mustV(err)
		return fd, id
	}
	ofd, oid := open(fromDir)
	defer unix.Close(ofd)
	nfd, nid := open(toDir)
	defer unix.Close(nfd)
	on, _, err := tr.Resolve(tree.NewDir(ofd, oid, nil), path.Base(from), false)
	mustV(err)
	nn, err := tr.Name(nid, path.Base(to))
	mustV(err)
	mustV(tr.Link(tree.NewDir(ofd, oid, nil), on, tree.NewDir(nfd, nid, nil), nn))
}

// backingSize is the size of the backing file of name.
func backingSize(t *testing.T, dir string, pw []byte, name string) int64 {
	t.Helper()
	v, err := vault.Open(dir, pw)
	mustV(err)
	defer v.Close()
	enc, err := v.EncryptPath(name)
	mustV(err)
	fi, err := os.Stat(filepath.Join(dir, enc))
	mustV(err)
	return fi.Size()
}

// sameInode fails unless the names are one backing inode with as many
// links.
func sameInode(t *testing.T, dir string, pw []byte, names ...string) {
	t.Helper()
	v, err := vault.Open(dir, pw)
	mustV(err)
	defer v.Close()
	var first unix.Stat_t
	for i, n := range names {
		enc, err := v.EncryptPath(n)
		mustV(err)
		var st unix.Stat_t
		mustV(unix.Stat(filepath.Join(dir, enc), &st))
		if i == 0 {
			first = st
		}
		if st.Ino != first.Ino || int(st.Nlink) != len(names) {
			t.Fatalf("%s: inode %d with %d links, want %s's inode %d with %d", n, st.Ino, st.Nlink, names[0], first.Ino, len(names))
		}
	}
}
