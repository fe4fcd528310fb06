package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
)

func TestInitInfo(t *testing.T) {
	for _, tc := range []struct {
		cipher, chunk, wantCipher string
		wantChunk                 int
	}{
		{"aes-gcm", "64k", "aes-256-gcm", 65536},
		{"xchacha", "4096", "xchacha20-poly1305", 4096},
		{"aes-256-gcm", "1M", "aes-256-gcm", 1 << 20},
	} {
		t.Run(tc.cipher+"/"+tc.chunk, func(t *testing.T) {
			dir, key := newVault(t, "pw", "--cipher", tc.cipher, "--chunk-size", tc.chunk)
			if k, err := parseMasterKey([]byte(key)); err != nil || len(k) != 32 {
				t.Fatalf("printed master key does not parse: %v", err)
			}
			for _, name := range []string{config.FileName, "encryptfs.dirid"} {
				fi, err := os.Stat(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o400 {
					t.Errorf("%s mode %v, want 0400", name, fi.Mode().Perm())
				}
			}
			r := run(t, "", "info", "--json", dir)
			r.want(t, 0)
			var info infoJSON
			if err := json.Unmarshal([]byte(r.stdout), &info); err != nil {
				t.Fatalf("info --json: %v\n%s", err, r.stdout)
			}
			if info.Cipher != tc.wantCipher || info.ChunkSize != tc.wantChunk || info.FormatVersion != 1 ||
				info.KDF.MemoryKiB != 8192 || info.KDF.Time != 1 || len(info.FeatureFlags) != 5 {
				t.Fatalf("info: %+v", info)
			}
			r = run(t, "", "info", dir)
			r.want(t, 0)
			if !strings.Contains(r.stdout, tc.wantCipher) || strings.Contains(r.stdout, "EncryptedKey") {
				t.Fatalf("info output:\n%s", r.stdout)
			}
		})
	}
}

func TestInitRefuses(t *testing.T) {
	nonEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(nonEmpty, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pf := writePassfile(t, "pw")
	empty := writePassfile(t, "")
	fresh := func() string { return filepath.Join(t.TempDir(), "v") }
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"non-empty dir", []string{"--passfile", pf, nonEmpty}, ExitCipherDir},
		{"a file", []string{"--passfile", pf, file}, ExitCipherDir},
		{"bad cipher", []string{"--passfile", pf, "--cipher", "rot13", fresh()}, ExitUsage},
		{"bad chunk size", []string{"--passfile", pf, "--chunk-size", "5000", fresh()}, ExitUsage},
		{"KDF below floor", []string{"--passfile", pf, "--kdf-memory", "1", fresh()}, ExitUsage},
		{"empty password", []string{"--passfile", empty, fresh()}, ExitPassword},
		{"missing passfile", []string{"--passfile", "/nonexistent/pw", fresh()}, ExitPassword},
		{"failing extpass", []string{"--extpass", "false", fresh()}, ExitPassword},
		{"two dirs", []string{"--passfile", pf, fresh(), fresh()}, ExitUsage},
		{"unknown flag", []string{"--frobnicate", fresh()}, ExitUsage},
	}
	before := hashTree(t, nonEmpty)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"init"}, cheapKDF...), tt.args...)
			run(t, "", args...).want(t, tt.code)
			unchangedTree(t, nonEmpty, before)
		})
	}
	// A refused init leaves a non-empty directory untouched (checked after
	// each case through the hash taken before them all).
}

func TestInitPasswordSources(t *testing.T) {
	// stdin (not a terminal): first line.
	dir := filepath.Join(t.TempDir(), "v")
	run(t, "from stdin\nignored\n", append(append([]string{"init"}, cheapKDF...), dir)...).want(t, 0)
	run(t, "", "passwd", "--passfile", writePassfile(t, "from stdin"), "--new-passfile", writePassfile(t, "x"), dir).want(t, 0)

	// extpass: first line of the program's output.
	dir2 := filepath.Join(t.TempDir(), "v")
	run(t, "", append(append([]string{"init", "--extpass", "echo from extpass"}, cheapKDF...), dir2)...).want(t, 0)
	run(t, "", "passwd", "--passfile", writePassfile(t, "from extpass"), "--new-passfile", writePassfile(t, "x"), dir2).want(t, 0)
}

func TestWrongPassword(t *testing.T) {
	dir, _ := newVault(t, "right")
	r := run(t, "", "passwd", "--passfile", writePassfile(t, "wrong"), "--new-passfile", writePassfile(t, "new"), dir)
	r.want(t, ExitWrongPassword)
	if r.stderr != "encryptfs: "+wrongPasswordMessage+"\n" {
		t.Fatalf("stderr %q", r.stderr)
	}
	mnt := t.TempDir()
	before := hashTree(t, dir)
	run(t, "", "mount", "-f", "--passfile", writePassfile(t, "wrong"), dir, mnt).want(t, ExitWrongPassword)
	run(t, "", "mount", "--passfile", writePassfile(t, "wrong"), dir, mnt).want(t, ExitWrongPassword)
	run(t, "wrong\n", "ls", dir).want(t, ExitWrongPassword)
	unchangedTree(t, dir, before)
}

func TestPasswd(t *testing.T) {
	dir, key := newVault(t, "old")
	before, err := os.ReadFile(filepath.Join(dir, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	// Current and new password from two stdin lines.
	// No copy of the old config is left in CIPHERDIR (it would keep the
	// old password working); --backup FILE keeps one outside, on request.
	bakPath := filepath.Join(t.TempDir(), "old.conf")
	run(t, "old\nnew\n", "passwd", "--backup", filepath.Join(dir, "old.conf"), dir).want(t, ExitUsage)
	run(t, "old\nnew\n", "passwd", "--backup", bakPath, dir).want(t, 0)
	bak, err := os.ReadFile(bakPath)
	if err != nil || string(bak) != string(before) {
		t.Fatalf("backup: %v", err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, config.FileName+"*")); len(names) != 1 {
		t.Fatalf("passwd left %v in CIPHERDIR", names)
	}
	oldPF, newPF, newerPF := writePassfile(t, "old"), writePassfile(t, "new"), writePassfile(t, "newer")
	run(t, "", "passwd", "--passfile", newPF, "--new-passfile", newerPF, "--backup", bakPath, dir).want(t, ExitUsage)
	run(t, "", "passwd", "--passfile", newPF, "--new-passfile", newPF, dir).want(t, 0)
	if names, _ := filepath.Glob(filepath.Join(dir, config.FileName+"*")); len(names) != 1 {
		t.Fatalf("passwd left %v in CIPHERDIR", names)
	}
	run(t, "", "passwd", "--passfile", oldPF, "--new-passfile", newerPF, dir).want(t, ExitWrongPassword)
	run(t, "", "passwd", "--passfile", newPF, "--new-passfile", newerPF, "--kdf-time", "2", dir).want(t, 0)
	r := run(t, "", "info", "--json", dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, `"Time": 2`) {
		t.Fatalf("--kdf-time not applied:\n%s", r.stdout)
	}
	// Forgotten password: the master key from init (two lines, as printed).
	r = run(t, key+"\n", "passwd", "--masterkey", "--new-passfile", oldPF, dir)
	r.want(t, 0)
	if !strings.Contains(r.stderr, "could not be checked") {
		t.Fatalf("no warning for an unchecked master key on an empty vault: %q", r.stderr)
	}
	run(t, "", "passwd", "--passfile", oldPF, "--new-passfile", newPF, dir).want(t, 0)
	run(t, "0123\n", "passwd", "--masterkey", "--new-passfile", oldPF, dir).want(t, ExitPassword)
	run(t, "zz"+strings.Repeat("0", 64)+"\n", "passwd", "--masterkey", "--new-passfile", oldPF, dir).want(t, ExitPassword)
}

func TestBadConfig(t *testing.T) {
	dir, _ := newVault(t, "pw")
	conf := filepath.Join(dir, config.FileName)
	good, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data string
		code int
	}{
		{"garbage", "not json at all", ExitCorruptConfig},
		{"truncated", string(good[:len(good)/2]), ExitCorruptConfig},
		{"unknown field", strings.Replace(string(good), `"Creator"`, `"Extra": 1, "Creator"`, 1), ExitCorruptConfig},
		{"future version", strings.Replace(string(good), `"FormatVersion": 1`, `"FormatVersion": 3`, 1), ExitUnsupported},
		{"unknown feature", strings.Replace(string(good), `"HKDF"`, `"HKDF", "Quantum"`, 1), ExitUnsupported},
		{"edited chunk size", strings.Replace(string(good), `"ChunkSize": 16384`, `"ChunkSize": 4096`, 1), ExitWrongPassword},
		{"missing", "", ExitCipherDir},
	}
	pf := writePassfile(t, "pw")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.data == string(good) {
				t.Fatal("edit did not apply")
			}
			os.Chmod(conf, 0o600)
			if err := os.WriteFile(conf, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.data == "" {
				os.Remove(conf)
			}
			before := hashTree(t, dir)
			code := tt.code
			if code == ExitWrongPassword { // info cannot know; unlocking does
				run(t, "", "info", dir).want(t, 0)
			} else {
				run(t, "", "info", dir).want(t, code)
			}
			run(t, "", "passwd", "--passfile", pf, "--new-passfile", writePassfile(t, "x"), dir).want(t, code)
			r := run(t, "", "mount", "--passfile", pf, dir, t.TempDir())
			r.want(t, code)
			if code == ExitUnsupported && !strings.Contains(r.stderr, "newer than this encryptfs") && !strings.Contains(r.stderr, "unknown feature") {
				t.Errorf("unclear refusal: %s", r.stderr)
			}
			unchangedTree(t, dir, before)
		})
	}
	run(t, "", "info", t.TempDir()).want(t, ExitCipherDir)
	run(t, "", "info", filepath.Join(t.TempDir(), "missing")).want(t, ExitCipherDir)
}

func TestUsage(t *testing.T) {
	run(t, "", "frobnicate").want(t, ExitUsage)
	run(t, "").want(t, ExitUsage)
	r := run(t, "", "--help")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "init") {
		t.Fatalf("help: %s", r.stdout)
	}
	r = run(t, "", "init", "-h")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "--passfile") && !strings.Contains(r.stdout, "-passfile") {
		t.Fatalf("init -h: %s", r.stdout)
	}
	if r := run(t, "", "version"); r.code != 0 || !strings.Contains(r.stdout, Version) {
		t.Fatalf("version: %+v", r)
	}
	run(t, "", "unmount", t.TempDir()).want(t, ExitUnmount)
	run(t, "", "unmount", "/proc").want(t, ExitUnmount)
}
