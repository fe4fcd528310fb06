package vault

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
)

// The committed example vault of trimmed leaves (docs/format.md §16,
// "Trimmed leaves"): v2-trimmed-aes-256-gcm is a copy of
// v2-compact-aes-256-gcm given the flag TrimmedLeaves by `encryptfs
// upgrade` (session.AddTrimmedLeaves: the config only), then written
// through this package: exampleV2TrimmedFiles, and compact/one.txt
// rewritten. So it holds what an upgraded vault holds, files whose roots
// hash whole tag blocks (no TRIMMED) beside files with trimmed leaves,
// and must stay readable, both kinds, forever after. Made by this test
// with ENCRYPTFS_REGENERATE_V2_TRIMMED_EXAMPLE=1; do not regenerate it.

const exampleV2TrimmedDir = "v2-trimmed-aes-256-gcm"

// exampleV2TrimmedFiles are written after the flag: one chunk, 2..16
// chunks (piece A), 17+ (pieces A and B), 300 chunks (a second group and
// a partial last block).
var exampleV2TrimmedFiles = map[string][]byte{
	"trimmed/one.txt":  []byte("one chunk, a 16-byte leaf\n"),
	"trimmed/two.bin":  exampleContent(4096 + 3),
	"trimmed/c17.bin":  exampleContent(16*4096 + 200),
	"trimmed/c300.bin": exampleContent(300*4096 + 9),
}

// exampleV2TrimmedRewritten is a file of the compact example rewritten
// after the flag: it moved to trimmed leaves.
const exampleV2TrimmedRewritten = "compact/one.txt"

var exampleV2TrimmedRewrittenContent = []byte("one chunk, rewritten: now trimmed\n")

func TestExampleVaultV2Trimmed(t *testing.T) {
	if os.Getenv("ENCRYPTFS_REGENERATE_V2_TRIMMED_EXAMPLE") == "1" {
		regenerateExampleV2Trimmed(t)
	}
	dir := examplePath(exampleV2TrimmedDir)
	before, c := exampleConfig(t, dir)
	if !c.Params.Has(config.FlagTrimmedLeaves) || !c.Params.Has(config.FlagCompactRoots) {
		t.Fatalf("the example's config has not trimmed leaves: %v", c.Params.FeatureFlags)
	}
	s, err := session.OpenWith(dir, keyslot.Credentials{Keyfiles: [][]byte{exampleV2Cred(t, "keyfile")}}, session.Options{FreshnessUse: session.FreshnessOff})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Engine().Suite().NewLeaves() != content.TrimmedLeaves {
		t.Fatal("the session does not write trimmed leaves")
	}
	checkExampleFsck(t, s)
	v, err := Open(dir, []byte(exampleV2Password))
	if err != nil {
		t.Fatal(err)
	}
	checkExampleContent(t, v)
	want := map[string][]byte{exampleV2TrimmedRewritten: exampleV2TrimmedRewrittenContent}
	for name, data := range exampleV2CompactFiles {
		if name != exampleV2TrimmedRewritten {
			want[name] = data
		}
	}
	for name, data := range exampleV2TrimmedFiles {
		want[name] = data
	}
	for name, data := range want {
		if got, err := v.ReadFile(name); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %v (%d bytes, want %d)", name, err, len(got), len(data))
		}
	}
	v.Close()
	// Which rule each root follows: the header says.
	for name := range want {
		trimmed := name == exampleV2TrimmedRewritten || exampleV2TrimmedFiles[name] != nil
		if got := exampleHeader(t, s, dir, name).Flags&content.FlagTrimmed != 0; got != trimmed {
			t.Errorf("%s: TRIMMED %v, want %v", name, got, trimmed)
		}
	}

	// A tag entry of piece A changed: the trimmed root catches it.
	cp := t.TempDir()
	copyTreeInto(t, dir, cp)
	v, err = Open(cp, []byte(exampleV2Password))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	enc, err := v.EncryptPath("trimmed/c17.bin")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(cp, enc))
	if err != nil {
		t.Fatal(err)
	}
	pieceA := 128 + 4096 + 32 // after chunk 0 (AES-GCM: 32 bytes of nonce and tag)
	b[pieceA+5*16+3] ^= 1     // entry 5
	if err := os.WriteFile(filepath.Join(cp, enc), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ReadFile("trimmed/c17.bin"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a changed tag entry: %v, want ErrCorrupt", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, config.FileName))
	if !bytes.Equal(before, after) {
		t.Fatal("opening changed the committed config")
	}
}

// exampleHeader is the parsed header of name's backing file in dir.
func exampleHeader(t *testing.T, s *session.Session, dir, name string) content.Header {
	t.Helper()
	v, err := Open(dir, []byte(exampleV2Password))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := v.EncryptPath(name)
	v.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, enc))
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Engine().Suite().ParseHeader(b[:content.HeaderSizeV2])
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return h
}

// regenerateExampleV2Trimmed copies the compact example, adds the flag
// and writes the files above.
func regenerateExampleV2Trimmed(t *testing.T) {
	dir := examplePath(exampleV2TrimmedDir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyTreeInto(t, examplePath(exampleV2CompactDir), dir)
	s, err := session.OpenWith(dir, keyslot.Credentials{Password: func() ([]byte, error) { return []byte(exampleV2Password), nil }}, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	added, err := s.AddTrimmedLeaves()
	s.Close()
	if err != nil || !added {
		t.Fatalf("AddTrimmedLeaves: %v, %v", added, err)
	}
	v, err := Open(dir, []byte(exampleV2Password))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Mkdir("trimmed", 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range exampleV2TrimmedFiles {
		if err := v.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.WriteFile(exampleV2TrimmedRewritten, exampleV2TrimmedRewrittenContent, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	chmodExampleFiles(dir)
}
