package vault

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
)

// The committed example vaults of format version 1 (testdata/example-vaults)
// must stay readable by every later encryptfs. They were made by this test
// with ENCRYPTFS_REGENERATE_EXAMPLES=1; regenerate only for a new format
// version, never to make this test pass.

const examplePassword = "encryptfs example v1"

var exampleVaults = []struct{ dir, cipher string }{
	{"v1-aes-256-gcm", "aes-256-gcm"},
	{"v1-xchacha20-poly1305", "xchacha20-poly1305"},
}

// exampleContent is a deterministic pattern of n bytes.
func exampleContent(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/4096)
	}
	return b
}

// exampleFiles is what every example vault holds: regular files of
// interesting sizes (chunk size 4096), nested and long names, a symlink.
var exampleFiles = map[string][]byte{
	"empty":                           nil,
	"hello.txt":                       []byte("Hello, EncryptFS v1!\n"),
	"chunk.bin":                       exampleContent(4096),
	"multi.bin":                       exampleContent(3*4096 + 123),
	"dir/sub/nested.txt":              []byte("nested\n"),
	"dir/" + strings.Repeat("L", 200): []byte("long name\n"),
}

const exampleLink, exampleTarget = "dir/link", "../hello.txt"

func examplePath(name string) string {
	return filepath.Join("..", "testdata", "example-vaults", name)
}

func TestExampleVaults(t *testing.T) {
	if os.Getenv("ENCRYPTFS_REGENERATE_EXAMPLES") == "1" {
		regenerateExamples(t)
	}
	for _, ex := range exampleVaults {
		t.Run(ex.dir, func(t *testing.T) {
			// Reading never writes: the committed vault stays as it is.
			v, err := Open(examplePath(ex.dir), []byte(examplePassword))
			if err != nil {
				t.Fatalf("open example vault: %v", err)
			}
			defer v.Close()
			if v.Cipher() != ex.cipher || v.ChunkSize() != 4096 {
				t.Fatalf("cipher %s chunk %d", v.Cipher(), v.ChunkSize())
			}
			for name, want := range exampleFiles {
				got, err := v.ReadFile(name)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: %v (got %d bytes, want %d)", name, err, len(got), len(want))
				}
			}
			if target, err := v.Readlink(exampleLink); err != nil || target != exampleTarget {
				t.Errorf("symlink: %q, %v", target, err)
			}
			ents, err := v.ReadDir("dir")
			if err != nil || len(ents) != 3 {
				t.Errorf("ReadDir dir: %d entries, %v", len(ents), err)
			}
		})
	}
}

func regenerateExamples(t *testing.T) {
	for _, ex := range exampleVaults {
		dir := examplePath(ex.dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		opts := cheap
		opts.Cipher = ex.cipher
		opts.Creator = "encryptfs example generator"
		v, err := Create(dir, []byte(examplePassword), opts)
		if err != nil {
			t.Fatal(err)
		}
		writeExampleContent(t, v)
		v.Close()
		// git keeps no modes but the executable bit; make the tree
		// readable as checked out.
		chmodExampleFiles(dir)
	}
}

// chmodExampleFiles makes the regular files of a regenerated example
// vault mode 0644, whatever the umask: they are committed as they are.
func chmodExampleFiles(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			os.Chmod(p, 0o644)
		}
		return err
	})
}

// exampleConfig reads the config of the example vault in dir: its bytes
// (a test checks that opening leaves them as they are) and parsed.
func exampleConfig(t *testing.T, dir string) ([]byte, *config.Config) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}
