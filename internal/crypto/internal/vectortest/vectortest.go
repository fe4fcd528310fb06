// Package vectortest is test support for the known-answer vectors under
// testdata/vectors: it finds the files, writes them in -update mode, compares
// them otherwise, and supplies the deterministic randomness the generators
// use. Only _test.go files import it; it is not part of any crypto package.
package vectortest

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/crypto/chacha20"
)

// UpdateEnv, when set to 1, regenerates the vector files like -update.
const UpdateEnv = "ENCRYPTFS_UPDATE_VECTORS"

// update is registered in every test binary that imports this package, so
// `go test ./internal/crypto/... -run TestVectors -update` works everywhere.
var update = flag.Bool("update", false, "rewrite testdata/vectors/*.json from the generators")

// Updating reports whether the vector files should be rewritten.
func Updating() bool { return *update || os.Getenv(UpdateEnv) == "1" }

// Hex is a byte string that marshals as lowercase hex in JSON.
type Hex []byte

// MarshalJSON encodes h as a hex string.
func (h Hex) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }

// UnmarshalJSON decodes a hex string.
func (h *Hex) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	d, err := hex.DecodeString(s)
	if err != nil {
		return err
	}
	*h = d
	return nil
}

// Rand returns a deterministic byte stream for a seed label: the ChaCha20
// keystream under SHA-256(seed) with a zero nonce. Generators use it for
// nonces, file IDs and salts so that vectors are reproducible.
func Rand(seed string) io.Reader {
	key := sha256.Sum256([]byte(seed))
	c, err := chacha20.NewUnauthenticatedCipher(key[:], make([]byte, chacha20.NonceSize))
	if err != nil {
		panic(err)
	}
	return &keystream{c: c}
}

type keystream struct{ c *chacha20.Cipher }

func (k *keystream) Read(p []byte) (int, error) {
	clear(p)
	k.c.XORKeyStream(p, p)
	return len(p), nil
}

// Bytes reads n bytes from r (a Rand stream), failing the test on error.
func Bytes(t testing.TB, r io.Reader, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// Path returns testdata/vectors/<name> at the module root.
func Path(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "vectors", name)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("module root (go.mod) not found")
		}
		dir = parent
	}
}

// Check compares generated vectors with the committed file name (a JSON file
// under testdata/vectors), or rewrites the file in update mode. loaded must be
// a pointer to a value of the same type as generated; it is filled from the
// file so the caller can also run the decrypt direction on the stored bytes.
func Check(t *testing.T, name string, generated, loaded any) {
	t.Helper()
	want, err := json.MarshalIndent(generated, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	path := Path(t, name)
	if Updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate with: go test ./internal/crypto/... -run TestVectors -update)", err)
	}
	dec := json.NewDecoder(bytes.NewReader(got))
	dec.DisallowUnknownFields()
	if err := dec.Decode(loaded); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !bytes.Equal(got, want) {
		gen := reflect.New(reflect.TypeOf(loaded).Elem())
		if err := json.Unmarshal(want, gen.Interface()); err != nil {
			t.Fatal(err)
		}
		t.Fatalf("%s differs from what the code produces now: %s\n"+
			"If the format change is intended, regenerate with -update and update docs/format.md.",
			name, cmp.Or(firstDiff(reflect.ValueOf(loaded).Elem(), gen.Elem(), ""), "formatting only"))
	}
}

// firstDiff describes the first difference between two decoded vector sets.
func firstDiff(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if d := firstDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice:
		if a.Type().Elem().Kind() != reflect.Uint8 {
			if a.Len() != b.Len() {
				return fmt.Sprintf("%s: %d entries in the file, %d generated", path, a.Len(), b.Len())
			}
			for i := 0; i < a.Len(); i++ {
				if d := firstDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
					return d
				}
			}
			return ""
		}
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return fmt.Sprintf("%s: file has %s, code gives %s", path, show(a), show(b))
	}
	return ""
}

// show prints byte strings as hex and everything else with %v.
func show(v reflect.Value) string {
	if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
		return fmt.Sprintf("%x", v.Bytes())
	}
	return fmt.Sprintf("%v", v.Interface())
}

// MasterKey is the fixed master key of every known-answer vector: bytes
// 0x00, 0x01, ..., 0x1f.
func MasterKey() []byte {
	k := make([]byte, 32)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}
