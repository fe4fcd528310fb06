package config

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
)

var testPassword = []byte("correct horse battery staple")

// newTestConfig creates a config with the cheapest KDF and returns it with
// its master key and stored bytes.
func newTestConfig(t *testing.T, cipher content.Algorithm, reverse bool) (*Config, []byte, []byte) {
	t.Helper()
	k, err := kdf.Cheapest(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := NewParams(string(cipher), content.DefaultChunkSize, k)
	p.Reverse = reverse
	c, master, err := Create(p, testPassword, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return c, master, data
}

func TestRoundTrip(t *testing.T) {
	for _, alg := range []content.Algorithm{content.AES256GCM, content.XChaCha20Poly1305, content.AES256SIV} {
		t.Run(string(alg), func(t *testing.T) {
			c, master, data := newTestConfig(t, alg, false)
			if len(master) != 32 {
				t.Fatalf("master key is %d bytes", len(master))
			}
			c2, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse(Marshal()): %v\n%s", err, data)
			}
			if c2.Creator != c.Creator || c2.Params.Cipher != string(alg) || !bytes.Equal(c2.EncryptedKey, c.EncryptedKey) {
				t.Fatalf("round trip changed the config: %+v vs %+v", c2, c)
			}
			data2, err := c2.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, data2) {
				t.Fatalf("Marshal(Parse(x)) != x:\n%s\n%s", data, data2)
			}
			got, err := c2.Unlock(testPassword)
			if err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			if !bytes.Equal(got, master) {
				t.Fatal("Unlock returned a different master key")
			}
		})
	}
}

func TestWrongPassword(t *testing.T) {
	c, _, _ := newTestConfig(t, content.AES256GCM, false)
	for _, pw := range []string{"", "correct horse battery stapl", "Correct horse battery staple"} {
		if _, err := c.Unlock([]byte(pw)); !errors.Is(err, ErrWrongPassword) {
			t.Errorf("Unlock(%q) = %v, want ErrWrongPassword", pw, err)
		}
	}
}

func TestCreatorEditAllowed(t *testing.T) {
	_, master, data := newTestConfig(t, content.AES256GCM, false)
	edited := bytes.Replace(data, []byte(`"Creator": "encryptfs"`), []byte(`"Creator": "someone else 9.9"`), 1)
	if bytes.Equal(edited, data) {
		t.Fatal("test edit did not apply")
	}
	c, err := Parse(edited)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Unlock(testPassword)
	if err != nil || !bytes.Equal(got, master) {
		t.Fatalf("Unlock after Creator edit: %v", err)
	}
}

// TestParamsEditDetected edits each parameter in the stored text; the edited
// file must either fail to parse or fail to unlock, never yield a key.
func TestParamsEditDetected(t *testing.T) {
	_, _, gcm := newTestConfig(t, content.AES256GCM, false)
	_, _, siv := newTestConfig(t, content.AES256SIV, false)
	saltOf := func(data []byte) string {
		c, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		return string(mustJSON(t, c.Params.KDF.Salt))
	}
	otherSalt := string(mustJSON(t, bytes.Repeat([]byte{7}, kdf.SaltSize)))
	tests := []struct {
		name     string
		data     []byte
		old, new string
		want     error
	}{
		{"FormatVersion future", gcm, `"FormatVersion": 1`, `"FormatVersion": 3`, ErrFutureVersion},
		{"FormatVersion 2 in a v1 file", gcm, `"FormatVersion": 1`, `"FormatVersion": 2`, ErrCorrupt},
		{"FormatVersion zero", gcm, `"FormatVersion": 1`, `"FormatVersion": 0`, ErrCorrupt},
		{"FeatureFlags order", gcm, `"HKDF",`, ``, ErrCorrupt},
		{"Cipher", gcm, `"aes-256-gcm"`, `"xchacha20-poly1305"`, ErrWrongPassword},
		{"ChunkSize", gcm, `"ChunkSize": 16384`, `"ChunkSize": 32768`, ErrWrongPassword},
		{"KDF Salt", gcm, saltOf(gcm), otherSalt, ErrWrongPassword},
		{"KDF Time", gcm, `"Time": 1,`, `"Time": 2,`, ErrWrongPassword},
		{"KDF MemoryKiB", gcm, `"MemoryKiB": 8192`, `"MemoryKiB": 8193`, ErrWrongPassword},
		{"KDF MemoryKiB too low", gcm, `"MemoryKiB": 8192`, `"MemoryKiB": 1024`, ErrCorrupt},
		{"KDF Threads", gcm, `"Threads": 1`, `"Threads": 2`, ErrWrongPassword},
		{"KDF Algorithm", gcm, `"argon2id"`, `"argon2i"`, ErrCorrupt},
		{"Reverse", siv, `"Reverse": false`, `"Reverse": true`, ErrWrongPassword},
		{"Reverse needs SIV", gcm, `"Reverse": false`, `"Reverse": true`, ErrCorrupt},
		{"whitespace inside Params", gcm, `"ChunkSize": 16384`, `"ChunkSize":  16384`, ErrWrongPassword},
		{"EncryptedKey", gcm, `"EncryptedKey": "`, `"EncryptedKey": "AAAA`, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := bytes.Replace(tt.data, []byte(tt.old), []byte(tt.new), 1)
			if bytes.Equal(edited, tt.data) {
				t.Fatalf("edit %q -> %q did not apply to\n%s", tt.old, tt.new, tt.data)
			}
			c, err := Parse(edited)
			if err == nil {
				_, err = c.Unlock(testPassword)
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestFeatureFlagOrder: reordering flags is a valid file but a different
// Params text, so it must not unlock.
func TestFeatureFlagOrder(t *testing.T) {
	_, _, data := newTestConfig(t, content.AES256GCM, false)
	edited := bytes.Replace(data, []byte(`"HKDF",`), []byte(``), 1)
	edited = bytes.Replace(edited, []byte(`"FinalChunkFlag"`), []byte(`"FinalChunkFlag", "HKDF"`), 1)
	c, err := Parse(edited)
	if err != nil {
		t.Fatalf("reordered flags should parse: %v\n%s", err, edited)
	}
	if _, err := c.Unlock(testPassword); !errors.Is(err, ErrWrongPassword) {
		t.Fatalf("got %v, want ErrWrongPassword", err)
	}
}

func TestStrictParsing(t *testing.T) {
	_, _, data := newTestConfig(t, content.AES256GCM, false)
	s := string(data)
	tests := []struct {
		name     string
		old, new string
		want     error
	}{
		{"unknown top-level field", `"Creator"`, `"Extra": 1, "Creator"`, ErrCorrupt},
		{"unknown Params field", `"Cipher"`, `"Compression": "zstd", "Cipher"`, ErrCorrupt},
		{"unknown KDF field", `"Salt"`, `"Pepper": "x", "Salt"`, ErrCorrupt},
		{"case-folded key", `"ChunkSize"`, `"chunksize"`, ErrCorrupt},
		{"duplicate key", `"Cipher": "aes-256-gcm"`, `"Cipher": "aes-256-gcm", "Cipher": "aes-256-gcm"`, ErrCorrupt},
		{"duplicate top-level key", `"Creator": "encryptfs"`, `"Creator": "a", "Creator": "b"`, ErrCorrupt},
		{"unknown feature flag", `"HKDF"`, `"HKDF", "Compression"`, ErrUnknownFeature},
		{"duplicate feature flag", `"HKDF"`, `"HKDF", "HKDF"`, ErrCorrupt},
		{"missing feature flag", `"HKDF",`, ``, ErrCorrupt},
		{"unknown cipher", `"aes-256-gcm"`, `"rot13"`, ErrCorrupt},
		{"chunk size not power of two", `"ChunkSize": 16384`, `"ChunkSize": 16383`, ErrCorrupt},
		{"chunk size too big", `"ChunkSize": 16384`, `"ChunkSize": 2097152`, ErrCorrupt},
		{"chunk size too small", `"ChunkSize": 16384`, `"ChunkSize": 2048`, ErrCorrupt},
		{"Threads overflow", `"Threads": 1`, `"Threads": 300`, ErrCorrupt},
		{"Time too big", `"Time": 1,`, `"Time": 65,`, ErrCorrupt},
		{"string version", `"FormatVersion": 1`, `"FormatVersion": "1"`, ErrCorrupt},
		{"trailing data", "}\n", "}\n{}", ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := strings.Replace(s, tt.old, tt.new, 1)
			if edited == s {
				t.Fatalf("edit %q did not apply", tt.old)
			}
			if _, err := Parse([]byte(edited)); !errors.Is(err, tt.want) {
				t.Fatalf("Parse = %v, want %v\n%s", err, tt.want, edited)
			}
		})
	}
}

func TestFutureVersionMessage(t *testing.T) {
	// A newer format may add fields; the version must still be reported.
	data := []byte(`{"Creator": "encryptfs 9", "Params": {"FormatVersion": 7, "NewThing": true}, "EncryptedKey": ""}`)
	_, err := Parse(data)
	if !errors.Is(err, ErrFutureVersion) {
		t.Fatalf("got %v, want ErrFutureVersion", err)
	}
	if !strings.Contains(err.Error(), "vault format 7 is newer than this encryptfs") {
		t.Fatalf("unclear message: %v", err)
	}
}

func TestGarbageNeverPanics(t *testing.T) {
	_, _, data := newTestConfig(t, content.AES256GCM, false)
	inputs := [][]byte{nil, []byte(""), []byte("null"), []byte("[]"), []byte("{}"), []byte(`{"Params": null}`),
		[]byte(`{"Params": []}`), []byte(`{"Params": {}}`), []byte("\x00\xff garbage"), bytes.Repeat([]byte("["), 100000),
		bytes.Repeat([]byte("x"), MaxFileSize+1)}
	for i := range len(data) - 1 { // every truncation (data[:len-1] only lacks the final newline)
		inputs = append(inputs, data[:i])
	}
	for _, in := range inputs {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%.40q) succeeded", in)
		}
	}
}

func TestRewrap(t *testing.T) {
	c, master, _ := newTestConfig(t, content.AES256GCM, false)
	before := c.Params
	k, err := kdf.New(rand.Reader, 2, kdf.MinMemoryKiB, 1)
	if err != nil {
		t.Fatal(err)
	}
	newPassword := []byte("new password")
	if err := c.Rewrap(master, newPassword, k, rand.Reader); err != nil {
		t.Fatal(err)
	}
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Unlock(testPassword); !errors.Is(err, ErrWrongPassword) {
		t.Fatalf("old password: got %v, want ErrWrongPassword", err)
	}
	got, err := c2.Unlock(newPassword)
	if err != nil || !bytes.Equal(got, master) {
		t.Fatalf("new password: %v", err)
	}
	if c2.Params.Cipher != before.Cipher || c2.Params.ChunkSize != before.ChunkSize || c2.Params.KDF.Time != 2 ||
		bytes.Equal(c2.Params.KDF.Salt, before.KDF.Salt) {
		t.Fatalf("params after rewrap: %+v (before %+v)", c2.Params, before)
	}
	// Bad inputs leave the config untouched.
	if err := c.Rewrap(master[:16], newPassword, k, rand.Reader); err == nil {
		t.Fatal("Rewrap accepted a short master key")
	}
	if err := c.Rewrap(master, newPassword, kdf.Params{}, rand.Reader); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Rewrap with zero KDF params: %v", err)
	}
	if got, err := c.Unlock(newPassword); err != nil || !bytes.Equal(got, master) {
		t.Fatalf("config changed by a failed Rewrap: %v", err)
	}
}

func TestMarshalRefusesInMemoryEdit(t *testing.T) {
	c, _, _ := newTestConfig(t, content.AES256GCM, false)
	c.Params.ChunkSize = 4096
	if _, err := c.Marshal(); err == nil {
		t.Fatal("Marshal wrote Params that differ from the wrapped ones")
	}
	if _, err := (&Config{}).Marshal(); err == nil {
		t.Fatal("Marshal of a zero Config succeeded")
	}
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load(empty dir) = %v, want ErrNotFound", err)
	}
	c, master, data := newTestConfig(t, content.AES256GCM, false)
	if err := c.Save(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o400 {
		t.Fatalf("mode %v, want 0400", fi.Mode().Perm())
	}
	if onDisk, _ := os.ReadFile(path); !bytes.Equal(onDisk, data) {
		t.Fatal("saved bytes differ from Marshal")
	}
	c2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c2.Unlock(testPassword); err != nil || !bytes.Equal(got, master) {
		t.Fatalf("Unlock after Load: %v", err)
	}
	// Overwrite (a read-only target is replaced by rename), then back up.
	if err := c2.Save(dir); err != nil {
		t.Fatalf("second Save: %v", err)
	}
	bakPath := filepath.Join(t.TempDir(), "old.conf")
	if err := WriteBackup(bakPath, data); err != nil {
		t.Fatal(err)
	}
	if bak, _ := os.ReadFile(bakPath); !bytes.Equal(bak, data) {
		t.Fatal("backup differs")
	}
	if err := WriteBackup(bakPath, data); err == nil {
		t.Fatal("WriteBackup overwrote an existing file")
	}
	// A leftover temp file is reported, not clobbered.
	if err := os.WriteFile(path+".tmp", []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c2.Save(dir); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Save over a stale temp file: %v", err)
	}
	if left, _ := os.ReadFile(path + ".tmp"); string(left) != "half" {
		t.Fatal("stale temp file was modified")
	}
}

func mustJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	out, err := jsonMarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
