package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/vault"
)

// fsckRun runs "fsck ARGS..." in process and returns the exit code and
// outputs.
func fsckRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	in, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	in.WriteString(stdin)
	in.Seek(0, 0)
	defer in.Close()
	var out, errb bytes.Buffer
	a := &App{Stdin: in, Stdout: &out, Stderr: &errb}
	code := a.Run(append([]string{"fsck"}, args...))
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// fsckVault makes a vault with a few files and returns CIPHERDIR, the
// passfile and the master key.
func fsckVault(t *testing.T) (dir, passfile, key string) {
	t.Helper()
	dir, key = newVault(t, "secret", "--chunk-size", "4k")
	v, err := vault.Open(dir, []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.MkdirAll("a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile("a/b/data", bytes.Repeat([]byte("x"), 3*4096+7), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := v.Symlink("somewhere", "a/link"); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, writePassfile(t, "secret"), key
}

func TestFsckCommand(t *testing.T) {
	dir, pf, key := fsckVault(t)

	r := fsckRun(t, "", "--passfile", pf, dir)
	r.want(t, ExitOK)
	if !strings.Contains(r.stdout, "clean") {
		t.Fatalf("clean vault output: %q", r.stdout)
	}
	fsckRun(t, key+"\n", "--masterkey", dir).want(t, ExitOK)
	fsckRun(t, strings.Repeat("ab", 32)+"\n", "--masterkey", dir).want(t, ExitWrongPassword)
	fsckRun(t, "", "--passfile", writePassfile(t, "wrong"), dir).want(t, ExitWrongPassword)
	fsckRun(t, "", "--passfile", pf, filepath.Join(dir, "nope")).want(t, ExitCipherDir)
	fsckRun(t, "", "--passfile", pf).want(t, ExitUsage)
	fsckRun(t, "", "--passfile", pf, "--salvage", filepath.Join(dir, "inside"), dir).want(t, ExitUsage)

	// Damage: a foreign file and a flipped byte in the data file's chunk 1.
	if err := os.WriteFile(filepath.Join(dir, "stray.txt"), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	var data string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > 4096 {
			data = p
		}
		return nil
	})
	f, err := os.OpenFile(data, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff, 0xff}, 36+4096+32+50)
	f.Close()

	r = fsckRun(t, "", "--passfile", pf, dir)
	r.want(t, ExitFsckProblems)
	if !strings.Contains(r.stdout, "bad-chunk") || !strings.Contains(r.stdout, "(plain /a/b/data): bytes 4096-8191") ||
		!strings.Contains(r.stdout, "foreign-name stray.txt") {
		t.Fatalf("damaged vault output:\n%s", r.stdout)
	}

	dest := filepath.Join(t.TempDir(), "out")
	r = fsckRun(t, "", "--passfile", pf, "--json", "--salvage", dest, dir)
	r.want(t, ExitFsckProblems)
	var rep fsck.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("JSON output: %v\n%s", err, r.stdout)
	}
	if rep.Clean || rep.Summary.Problems != 2 || rep.Summary.BadChunks != 1 || rep.Summary.ByKind[fsck.KindChunk] != 1 {
		t.Fatalf("JSON report: %+v", rep)
	}
	for _, p := range rep.Problems {
		if p.Kind == fsck.KindChunk && (p.PlainPath != "/a/b/data" || len(p.Ranges) != 1 || p.Ranges[0] != (fsck.Range{Start: 4096, End: 8192}) || p.SalvagedAs != "a/b/data") {
			t.Errorf("bad-chunk problem: %+v", p)
		}
	}
	got, err := os.ReadFile(filepath.Join(dest, "a/b/data"))
	want := bytes.Repeat([]byte("x"), 3*4096+7)
	clear(want[4096:8192])
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("salvaged data: %v", err)
	}
	if tgt, err := os.Readlink(filepath.Join(dest, "a/link")); err != nil || tgt != "somewhere" {
		t.Fatalf("salvaged link: %q %v", tgt, err)
	}
	// A second salvage into the same (now non-empty) directory is refused.
	fsckRun(t, "", "--passfile", pf, "--salvage", dest, dir).want(t, ExitUsage)
}
