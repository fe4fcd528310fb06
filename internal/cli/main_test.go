package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// binary is the encryptfs program built once for the tests that run it.
var binary string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "encryptfs-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Freshness state (a default vault records it) goes under the test
	// run's directory, never into ~/.local/state or /var/lib: the binary
	// and its daemon children inherit this.
	if err := os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binary = filepath.Join(dir, "encryptfs")
	// encryptfs_testkdf: init's default KDF cost and passwd's floor are
	// kdf's floor in this binary, so that the tests stay fast
	// (kdfdefaults_testkdf.go); in-process tests check the real floor.
	out, err := exec.Command("go", "build", "-tags", "encryptfs_testkdf", "-o", binary, "github.com/encryptfs/encryptfs/cmd/encryptfs").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

// run executes the binary with stdin (nil: empty, not a terminal).
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// want checks the exit code and, on failure, that stderr is one line
// (besides --json progress lines, which start with '{').
func (r result) want(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	if code != 0 && code != ExitUsage && strings.Count(withoutProgress(r.stderr), "\n") != 1 {
		t.Fatalf("stderr is not one line:\n%s", r.stderr)
	}
}

// withoutProgress drops the --json progress lines from stderr.
func withoutProgress(stderr string) string {
	var keep []string
	for _, line := range strings.SplitAfter(stderr, "\n") {
		if !strings.HasPrefix(line, `{"op":`) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}

// cheapKDF makes init and passwd fast: the floor of the Argon2id bounds.
var cheapKDF = []string{"--kdf-time", "1", "--kdf-memory", "8", "--kdf-threads", "1"}

// writePassfile writes pw to a file in a fresh temp dir.
func writePassfile(t *testing.T, pw string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(p, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// newVault runs init with password pw and returns CIPHERDIR and the
// master key as printed. The vault is format 1 (the tests written for it
// keep testing it) unless extra says --format 2; then the key printed is
// the recovery key.
func newVault(t *testing.T, pw string, extra ...string) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cipher")
	args := append([]string{"init", "--passfile", writePassfile(t, pw)}, cheapKDF...)
	if !slices.Contains(extra, "--format") {
		args = append(args, "--format", "1")
	}
	args = append(append(args, extra...), dir)
	r := run(t, "", args...)
	r.want(t, 0)
	return dir, masterKeyFrom(t, r.stdout)
}

var keyLine = regexp.MustCompile(`^[0-9a-f]{8}(-[0-9a-f]{8}){7}$`)

// masterKeyFrom extracts the grouped hex key from init's output: one line
// of eight dash-separated groups (a paste of one line is the whole key).
func masterKeyFrom(t *testing.T, out string) string {
	t.Helper()
	var key []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if keyLine.MatchString(line) {
			key = append(key, line)
		}
	}
	if len(key) != 1 {
		t.Fatalf("no master key on one line in output:\n%s", out)
	}
	return key[0]
}
