package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
)

// runApp runs the CLI in this process (so that its KDF defaults and the
// available memory can be injected) with stdin from a file holding stdin.
func runApp(t *testing.T, a *App, stdin string, args ...string) result {
	t.Helper()
	in := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(in, []byte(stdin), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out, errb bytes.Buffer
	a.Stdin, a.Stdout, a.Stderr, a.Rand = f, &out, &errb, rand.Reader
	code := a.Run(args)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func loadKDF(t *testing.T, dir string) kdf.Params {
	t.Helper()
	c, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c.Params.KDF
}

// TestPasswdKDFFloor: passwd never writes a KDF cost below the default
// unless a flag asks for it. The test injects a "default" just above the
// floor (16 MiB, 2 passes, 2 lanes) so that Argon2id stays cheap.
func TestPasswdKDFFloor(t *testing.T) {
	if got, want := (&App{}).defaultKDF(), (kdfCosts{kdf.DefaultTime, kdf.DefaultMemoryKiB, kdf.DefaultThreads}); got != want {
		t.Fatalf("the product's KDF default is %+v, want kdf's %+v", got, want)
	}
	floor := kdfCosts{time: 2, memoryKiB: 16 << 10, threads: 2}
	check := func(t *testing.T, dir string, want kdfCosts) {
		t.Helper()
		if got := costsOf(loadKDF(t, dir)); got != want {
			t.Fatalf("new config's KDF costs %+v, want %+v", got, want)
		}
	}
	newPF := writePassfile(t, "new")

	t.Run("masterkey", func(t *testing.T) {
		// The vault was made at the floor, as an attacker who lowered the
		// unauthenticated costs would leave it.
		dir, key := newVault(t, "old")
		r := runApp(t, &App{kdfDefaults: floor}, key+"\n", "passwd", "--masterkey", "--new-passfile", newPF, dir)
		r.want(t, 0)
		check(t, dir, floor)
	})
	t.Run("password", func(t *testing.T) {
		dir, _ := newVault(t, "old")
		r := runApp(t, &App{kdfDefaults: floor}, "", "passwd", "--passfile", writePassfile(t, "old"), "--new-passfile", newPF, dir)
		r.want(t, 0)
		check(t, dir, floor)
	})
	t.Run("higher costs are kept", func(t *testing.T) {
		dir, key := newVault(t, "old", "--kdf-time", "3", "--kdf-memory", "24")
		r := runApp(t, &App{kdfDefaults: floor}, key+"\n", "passwd", "--masterkey", "--new-passfile", newPF, dir)
		r.want(t, 0)
		check(t, dir, kdfCosts{time: 3, memoryKiB: 24 << 10, threads: 2})
	})
	t.Run("explicit flags are the user's choice", func(t *testing.T) {
		dir, key := newVault(t, "old")
		r := runApp(t, &App{kdfDefaults: floor}, key+"\n", append([]string{"passwd", "--masterkey", "--new-passfile", newPF}, append(cheapKDF, dir)...)...)
		r.want(t, 0)
		check(t, dir, kdfCosts{time: 1, memoryKiB: 8 << 10, threads: 1})
	})
}

// TestKDFMemoryLimit: a config whose Argon2id memory cost is above what the
// machine has available is refused before Argon2id runs. The available
// memory is injected (32 MiB) and the forged cost is 64 MiB, so nothing big
// is allocated either way; before the limit, Argon2id ran and the forged
// config read as a wrong password.
func TestKDFMemoryLimit(t *testing.T) {
	dir, key := newVault(t, "pw")
	path := filepath.Join(dir, config.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Replace(data, []byte(`"MemoryKiB": 8192`), []byte(`"MemoryKiB": 65536`), 1)
	if bytes.Equal(forged, data) {
		t.Fatalf("no MemoryKiB to forge in\n%s", data)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, forged, 0o600); err != nil {
		t.Fatal(err)
	}
	small := func() (uint64, bool) { return 32 << 10, true }
	pf := writePassfile(t, "pw")
	for _, args := range [][]string{
		{"passwd", "--passfile", pf, "--new-passfile", pf, dir},
		{"ls", "--passfile", pf, dir},
		{"fsck", "--passfile", pf, dir},
	} {
		t.Run(args[0], func(t *testing.T) {
			r := runApp(t, &App{memAvailableKiB: small, kdfDefaults: kdfCosts{1, 8 << 10, 1}}, "", args...)
			r.want(t, ExitUnsupported)
			if !strings.Contains(r.stderr, "64 MiB is more than the 32 MiB available here") {
				t.Fatalf("stderr %q", r.stderr)
			}
		})
	}
	// The master key runs no Argon2id to unlock, but passwd keeps the
	// stored (higher) cost and refuses to write a config this machine
	// could not unlock; a flag gives a cost that fits.
	r := runApp(t, &App{memAvailableKiB: small, kdfDefaults: kdfCosts{1, 8 << 10, 1}}, key+"\n", "passwd", "--masterkey", "--new-passfile", pf, dir)
	r.want(t, ExitUnsupported)
	r = runApp(t, &App{memAvailableKiB: small, kdfDefaults: kdfCosts{1, 8 << 10, 1}}, key+"\n", "passwd", "--masterkey", "--new-passfile", pf, "--kdf-memory", "8", dir)
	r.want(t, 0)
	// passwd refuses to write a config this machine could not unlock.
	r = runApp(t, &App{memAvailableKiB: small}, "", "passwd", "--passfile", pf, "--new-passfile", pf, "--kdf-memory", "64", dir)
	r.want(t, ExitUnsupported)
	// With enough memory, the vault opens as before.
	r = runApp(t, &App{memAvailableKiB: func() (uint64, bool) { return 9 << 10, true }}, "", "ls", "--passfile", pf, dir)
	r.want(t, 0)
	if got := parseMemAvailableOr0("MemTotal: 100 kB\nMemAvailable:   123456 kB\n"); got != 123456 {
		t.Fatalf("parseMemAvailable: %d", got)
	}
}

func parseMemAvailableOr0(s string) uint64 {
	n, _ := parseMemAvailable([]byte(s))
	return n
}

// runTimeout runs the binary and fails the test if it does not finish in
// time (a FIFO planted as the config used to hang every command).
func runTimeout(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v hung", args)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// TestPlantedConfig: a symlink (to a real config, to /dev/zero), a FIFO, a
// directory or an oversized file in place of encryptfs.conf (or of the
// reverse config) is refused at once as a corrupt config.
func TestPlantedConfig(t *testing.T) {
	good, _ := newVault(t, "pw")
	goodConf := filepath.Join(good, config.FileName)
	pf := writePassfile(t, "pw")
	plant := map[string]func(path string) error{
		"symlink to a config":    func(p string) error { return os.Symlink(goodConf, p) },
		"symlink to /dev/zero":   func(p string) error { return os.Symlink("/dev/zero", p) },
		"FIFO":                   func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"directory":              func(p string) error { return os.Mkdir(p, 0o700) },
		"oversized regular file": func(p string) error { return os.WriteFile(p, bytes.Repeat([]byte(" "), config.MaxFileSize+1), 0o600) },
	}
	for name, mk := range plant {
		t.Run(name, func(t *testing.T) {
			dir, _ := newVault(t, "pw")
			conf := filepath.Join(dir, config.FileName)
			if err := os.Remove(conf); err != nil {
				t.Fatal(err)
			}
			if err := mk(conf); err != nil {
				t.Fatal(err)
			}
			want := "is not a regular file"
			if strings.HasPrefix(name, "oversized") {
				want = "too large"
			}
			for _, args := range [][]string{
				{"info", dir},
				{"passwd", "--passfile", pf, "--new-passfile", pf, dir},
				{"ls", "--passfile", pf, dir},
			} {
				r := runTimeout(t, args...)
				r.want(t, ExitCorruptConfig)
				if !strings.Contains(r.stderr, want) {
					t.Fatalf("%v: stderr %q, want %q", args, r.stderr, want)
				}
			}
		})
	}
	t.Run("reverse config", func(t *testing.T) {
		plain := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(plain, config.ReverseFileName), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runTimeout(t, "info", "--reverse", plain)
		r.want(t, ExitCorruptConfig)
		if !strings.Contains(r.stderr, "is not a regular file (it is a FIFO)") {
			t.Fatalf("stderr %q", r.stderr)
		}
	})
}

// TestInfoEscapesCreator: the unauthenticated Creator cannot put terminal
// escapes, line breaks or bidi overrides on the user's screen.
func TestInfoEscapesCreator(t *testing.T) {
	dir, _ := newVault(t, "pw")
	path := filepath.Join(dir, config.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	evil := "x\x1b]0;pwned\x07\nCipher:         none\u202eevil"
	old, _ := json.Marshal(c.Creator)
	creator, _ := json.Marshal(evil)
	forged := bytes.Replace(data, old, creator, 1)
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, forged, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"info", dir}, {"info", "--json", dir}} {
		r := run(t, "", args...)
		r.want(t, 0)
		for _, bad := range []string{"\x1b", "\x07", "\u202e", "\nCipher:         none"} {
			if strings.Contains(r.stdout, bad) {
				t.Fatalf("%v printed %q raw:\n%s", args, bad, r.stdout)
			}
		}
		if args[1] == "--json" {
			var got infoJSON
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Creator != evil {
				t.Fatalf("info --json no longer round-trips the Creator: %v %q", err, got.Creator)
			}
		} else if !strings.Contains(r.stdout, `"x\x1b]0;pwned\a\nCipher:         none\u202eevil"`) {
			t.Fatalf("Creator not shown escaped:\n%s", r.stdout)
		}
	}
}
