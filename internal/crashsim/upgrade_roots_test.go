package crashsim_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crashsim"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
)

// TestCrashReplayUpgradeRoots replays every crash point of the upgrade of
// a bound vault without file roots (a format-2 vault made with
// BoundLocations only): every file header and layout is rewritten with
// the same file ID and bindings, tag blocks and a root (docs/format.md
// §14 "Upgrading", §16), and FileRoots is written to the config last.
// Every crash state opens with the old features and the same plaintext,
// or is refused as half-upgraded; a second upgrade finishes it with the
// same plaintext. The upgraded vault's roots verify, and catch a spliced
// chunk that the binding alone accepts.
func TestCrashReplayUpgradeRoots(t *testing.T) {
	dir := t.TempDir()
	pw := []byte("roots upgrade password")
	createBoundNoRoots(t, dir, pw)
	v, err := vault.Open(dir, pw)
	if err != nil {
		t.Fatal(err)
	}
	mustV(v.Mkdir("d1", 0o755))
	mustV(v.Mkdir("d1/sub", 0o755))
	mustV(v.WriteFile("zero", nil, 0o644))
	mustV(v.WriteFile("one", []byte{1}, 0o600))
	mustV(v.WriteFile("d1/chunk", data(41, 4096), 0o644))
	mustV(v.WriteFile("d1/sub/many", data(42, 3*4096+5), 0o644))
	mustV(v.WriteFile("d1/"+longName("R"), data(43, 700), 0o644))
	mustV(v.SetXattr("d1/chunk", "user.color", []byte("red")))
	mustV(v.Symlink("d1/chunk", "link"))
	// A SPARSE file: two chunk holes between data, which become holes
	// with zero tag entries.
	f, err := v.OpenFile("sparse", os.O_CREATE|os.O_WRONLY, 0o644)
	mustV(err)
	_, err = f.WriteAt([]byte("head"), 0)
	mustV(err)
	_, err = f.WriteAt([]byte("tail"), 3*4096)
	mustV(err)
	mustV(f.Close())
	// A file cut to 0 bytes: its header stays, with no chunk.
	mustV(v.WriteFile("cut", data(44, 5000), 0o644))
	f, err = v.OpenFile("cut", os.O_WRONLY, 0)
	mustV(err)
	mustV(f.Truncate(0))
	mustV(f.Close())
	mustV(v.Close())
	if enc, err := headerOnly(dir, pw, "cut"); err != nil {
		t.Fatalf("cut: %v (%s)", err, enc)
	}
	want := plaintextOf(t, dir, pw)
	if c, err := config.Load(dir); err != nil || !c.Params.Bound() || c.Params.Has(config.FlagFileRoots) {
		t.Fatalf("the test vault is not bound without roots: %v", err)
	}

	rec, err := crashsim.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	runUpgrade(t, dir, pw, backing.NewFS(rec), rand.NewChaCha8([32]byte{18}))
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	if got := plaintextOf(t, dir, pw); !equalPlain(got, want) {
		t.Fatalf("after the upgrade: %s", diffPlain(got, want))
	}
	if c, err := config.Load(dir); err != nil || !c.Params.Has(config.FlagFileRoots) {
		t.Fatalf("after the upgrade the config has no FileRoots: %v", err)
	}

	replayUpgrade(t, rec, pw, want, "roots conversion")
	if enc, err := headerOnly(dir, pw, "cut"); err != nil {
		t.Fatalf("cut after the upgrade: %v (%s)", err, enc)
	}
	checkRootsSplice(t, dir, pw, "d1/sub/many")
}

// headerOnly checks that file name of the vault in dir is stored as a
// header only (128 bytes).
func headerOnly(dir string, pw []byte, name string) (string, error) {
	v, err := vault.Open(dir, pw)
	if err != nil {
		return "", err
	}
	defer v.Close()
	enc, err := v.EncryptPath(name)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(filepath.Join(dir, enc))
	if err == nil && fi.Size() != content.HeaderSizeV2 {
		err = fmt.Errorf("%d bytes, want a header only", fi.Size())
	}
	return enc, err
}

// createBoundNoRoots makes a format-2 vault in dir with BoundLocations
// only (as init --file-roots=false --freshness=false).
func createBoundNoRoots(t *testing.T, dir string, pw []byte) {
	t.Helper()
	r := rand.NewChaCha8([32]byte{17})
	k, err := session.NewKDFParams(r, 1, 8192, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := config.NewParamsV2(string(content.AES256GCM), 4096).WithBoundLocations(bytes.Repeat([]byte{0x5a}, config.VaultIDSize))
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

// checkRootsSplice checks that the upgraded vault in dir has file roots:
// chunk 1 of file name (at least three chunks of 4096 bytes) is
// rewritten, and the old stored chunk 1 put back into the backing file.
// Same file ID, index and final flag: the chunk's AEAD (v1's and the
// binding's guarantees) accepts it, only the file's root catches it.
func checkRootsSplice(t *testing.T, dir string, pw []byte, name string) {
	t.Helper()
	v, err := vault.Open(dir, pw)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := v.EncryptPath(name)
	mustV(err)
	backingPath := filepath.Join(dir, enc)
	old, err := os.ReadFile(backingPath)
	mustV(err)
	f, err := v.OpenFile(name, os.O_WRONLY, 0)
	mustV(err)
	_, err = f.WriteAt(bytes.Repeat([]byte("new"), 100), 4096+10)
	mustV(err)
	mustV(f.Close())
	cur, err := os.ReadFile(backingPath)
	mustV(err)
	if len(cur) != len(old) {
		t.Fatalf("%s: backing size changed by an overwrite: %d, was %d", name, len(cur), len(old))
	}
	// Chunk 1 is the first run of bytes after the header and the first
	// tag block that changed (roots layout: header, tag block, chunks);
	// restore every byte of it from the old file.
	first := content.HeaderSizeV2 + content.TagBlockSize
	for first < len(cur) && cur[first] == old[first] {
		first++
	}
	if first == len(cur) {
		t.Fatalf("%s: the overwrite changed no chunk past the first tag block (not the roots layout?)", name)
	}
	last := first
	for i := first; i < len(cur); i++ {
		if cur[i] != old[i] {
			last = i
		}
	}
	fd, err := os.OpenFile(backingPath, os.O_WRONLY, 0)
	mustV(err)
	_, err = fd.WriteAt(old[first:last+1], int64(first))
	mustV(err)
	mustV(fd.Close())
	mustV(v.Close())
	v, err = vault.Open(dir, pw)
	mustV(err)
	defer v.Close()
	if _, err := v.ReadFile(name); !errors.Is(err, content.ErrCorruptChunk) {
		t.Fatalf("%s with an old chunk spliced back: %v, want a corrupt chunk (the root does not match)", name, err)
	}
}
