package vault

import (
	"bytes"
	"context"
	"errors"
	"io"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/upgrade"
)

// The committed example vault of compact file roots (docs/format.md §16,
// "Compact layout"): v2-compact-aes-256-gcm is what `encryptfs upgrade`
// (upgrade.Content) made of a copy of v2-bound-aes-256-gcm, so it
// has the same master key, key slots (the credentials in v2-credentials)
// and VaultID, with FileRoots and CompactRoots (its files in the compact
// layout), and then exampleV2CompactFiles written through this package.
// It must stay readable, with compact roots, forever after. Made by this
// test with ENCRYPTFS_REGENERATE_V2_COMPACT_EXAMPLE=1; do not regenerate
// it.

const exampleV2CompactDir = "v2-compact-aes-256-gcm"

// exampleV2CompactFiles are written after the upgrade: one chunk (no
// entry stored), 2..16 chunks (piece A), 17+ chunks (pieces A and B),
// 300 chunks (a second group), and compactSparse.
var exampleV2CompactFiles = map[string][]byte{
	"compact/one.txt":  []byte("one chunk, no tag entry stored\n"),
	"compact/two.bin":  exampleContent(4096 + 1),
	"compact/c17.bin":  exampleContent(16*4096 + 100),
	"compact/c300.bin": exampleContent(300*4096 + 7),
}

// The sparse file: data in chunk 0, 5 and 600, holes between (in group 0
// and over group 1).
const exampleV2CompactSparse = "compact/sparse.bin"

var exampleV2CompactSparseAt = []int64{0, 5*4096 + 3, 600*4096 + 11}

func exampleV2CompactSparseContent() []byte {
	b := make([]byte, exampleV2CompactSparseAt[2]+4)
	for _, at := range exampleV2CompactSparseAt {
		copy(b[at:], "data")
	}
	return b
}

func TestExampleVaultV2Compact(t *testing.T) {
	if os.Getenv("ENCRYPTFS_REGENERATE_V2_COMPACT_EXAMPLE") == "1" {
		regenerateExampleV2Compact(t)
	}
	dir := examplePath(exampleV2CompactDir)
	before, c := exampleConfig(t, dir)
	if !c.Params.Bound() || !c.Params.Has(config.FlagFileRoots) || !c.Params.Has(config.FlagCompactRoots) {
		t.Fatalf("the example's config has not compact file roots: %v", c.Params.FeatureFlags)
	}
	s, err := session.OpenWith(dir, keyslot.Credentials{Keyfiles: [][]byte{exampleV2Cred(t, "keyfile")}}, session.Options{FreshnessUse: session.FreshnessOff})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Engine().Suite().Compact() {
		t.Fatal("the session does not use the compact layout")
	}
	checkExampleFsck(t, s)
	s.Close()
	v, err := Open(dir, []byte(exampleV2Password))
	if err != nil {
		t.Fatal(err)
	}
	checkExampleContent(t, v)
	for name, want := range exampleV2CompactFiles {
		if got, err := v.ReadFile(name); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v (%d bytes, want %d)", name, err, len(got), len(want))
		}
	}
	if got, err := v.ReadFile(exampleV2CompactSparse); err != nil || !bytes.Equal(got, exampleV2CompactSparseContent()) {
		t.Errorf("%s: %v", exampleV2CompactSparse, err)
	}
	// Compact sizes: hello.txt, 1 chunk of 21 bytes, is header, chunk
	// and tag (AES-GCM) with no entry stored; two.bin adds piece A.
	for name, size := range map[string]int64{"hello.txt": 128 + 21 + 32, "compact/two.bin": 128 + 4096 + 1 + 2*32 + 256} {
		enc, err := v.EncryptPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(dir, enc)); err != nil || fi.Size() != size {
			t.Errorf("%s: backing %v, want %d bytes (compact layout)", name, err, size)
		}
	}
	v.Close()
	// A splice the root catches: chunk 1 of c17.bin swapped with chunk 2
	// (each authenticates at its own index only, so v1's rules would say
	// which; the tags in piece A do not match either way).
	cp := t.TempDir()
	copyTreeInto(t, dir, cp)
	v, err = Open(cp, []byte(exampleV2Password))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := v.EncryptPath("compact/c17.bin")
	v.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(cp, enc))
	if err != nil {
		t.Fatal(err)
	}
	// Chunk 0 at 128, piece A after it, chunks 1.. after piece A.
	ccs := 4096 + 32
	c1 := 128 + ccs + 256
	copy(b[c1:c1+16], b[c1+ccs:c1+ccs+16])
	if err := os.WriteFile(filepath.Join(cp, enc), b, 0o644); err != nil {
		t.Fatal(err)
	}
	v, err = Open(cp, []byte(exampleV2Password))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.ReadFile("compact/c17.bin"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a damaged chunk 1: %v, want ErrCorrupt", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, config.FileName))
	if !bytes.Equal(before, after) {
		t.Fatal("opening changed the committed config")
	}
}

// checkExampleFsck runs fsck on the example vault opened as s: it must
// find nothing.
func checkExampleFsck(t *testing.T, s *session.Session) {
	t.Helper()
	rep, err := fsck.Check(context.Background(), s, fsck.Options{})
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("fsck of the example: %v, %+v", err, rep.Problems)
	}
}

// regenerateExampleV2Compact upgrades a copy of the bound example vault
// (to file roots in the compact layout) and writes exampleV2CompactFiles.
func regenerateExampleV2Compact(t *testing.T) {
	dir := examplePath(exampleV2CompactDir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyTreeInto(t, examplePath(exampleV2BoundDir), dir)
	s, err := session.OpenWith(dir, keyslot.Credentials{Password: func() ([]byte, error) { return []byte(exampleV2Password), nil }},
		session.Options{Upgrading: true, Rand: io.Reader(mathrand.NewChaCha8([32]byte{22}))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = upgrade.Content(s, nil)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	v, err := Open(dir, []byte(exampleV2Password))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Mkdir("compact", 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range exampleV2CompactFiles {
		if err := v.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := v.OpenFile(exampleV2CompactSparse, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range exampleV2CompactSparseAt {
		if _, err := f.WriteAt([]byte("data"), at); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(f.Close(), v.Close()); err != nil {
		t.Fatal(err)
	}
	chmodExampleFiles(dir)
}
