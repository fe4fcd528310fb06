package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// blockingPassfile is a FIFO nobody writes: a command that reads the
// password from it waits forever, so one that returns did not ask.
func blockingPassfile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pw.fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runBounded is run with a deadline: a command still running after d
// (waiting for a password) is killed and the test fails.
func runBounded(t *testing.T, d time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v still running after %v (asked for a password?)", args, d)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// TestMountValidatesFirst: a bad -o option is a usage error before any
// password is read, and so is a second mount of a vault this machine
// serves already (8, naming where).
func TestMountValidatesFirst(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2")
	fifo := blockingPassfile(t)
	for _, opt := range []string{"garbage", "nonempty", "ro,garbage=1"} {
		r := runBounded(t, 5*time.Second, "mount", "-o", opt, "--passfile", fifo, dir, t.TempDir())
		r.want(t, ExitUsage)
		if strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, strings.Split(strings.TrimPrefix(opt, "ro,"), "=")[0]) {
			t.Errorf("-o %s: stderr %q: want one line naming the option", opt, r.stderr)
		}
	}

	fstest.RequireFUSE(t)
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", writePassfile(t, "pw"), dir, mnt).want(t, 0)
	start := time.Now()
	r := runBounded(t, 5*time.Second, "mount", "--passfile", fifo, dir, t.TempDir())
	r.want(t, ExitMountPoint)
	if !strings.Contains(r.stderr, "mounted on "+mnt) || strings.Contains(r.stderr, "fresh:") {
		t.Errorf("second mount: stderr %q: want it to name %s", r.stderr, mnt)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("second mount took %v to refuse", d)
	}
	run(t, "", "unmount", mnt).want(t, 0)
}

// TestInitInterrupted: Ctrl-C while init waits for the password removes
// the directory init made, and only that one.
func TestInitInterrupted(t *testing.T) {
	for _, existed := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "v")
		if existed {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(binary, "init", "--passfile", blockingPassfile(t), dir)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "init to make "+dir, func() bool { _, err := os.Stat(dir); return err == nil })
		time.Sleep(200 * time.Millisecond) // its signal handler is installed right after
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != ExitInterrupted {
			t.Fatalf("existed=%v: init after SIGINT: %v, stderr %q", existed, err, errb.String())
		}
		_, err = os.Stat(dir)
		if existed && err != nil {
			t.Errorf("init removed %s, which was there before: %v", dir, err)
		}
		if !existed && !os.IsNotExist(err) {
			t.Errorf("init left %s behind after SIGINT: %v", dir, err)
		}
	}
}

// TestExportWrongPasswordLeavesNoDest: a refused unlock removes the
// DESTDIR export made, and keeps one that was there.
func TestExportWrongPasswordLeavesNoDest(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2")
	dest := filepath.Join(t.TempDir(), "out")
	run(t, "", "export", "--passfile", writePassfile(t, "wrong"), dir, dest).want(t, ExitWrongPassword)
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("export left %s behind: %v", dest, err)
	}
	run(t, "", "export", "--passfile", writePassfile(t, "pw"), dir, dest, "/missing").want(t, ExitError)
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("export of a missing PATH left %s behind: %v", dest, err)
	}
	if err := os.Mkdir(dest, 0o700); err != nil {
		t.Fatal(err)
	}
	run(t, "", "export", "--passfile", writePassfile(t, "wrong"), dir, dest).want(t, ExitWrongPassword)
	if _, err := os.Stat(dest); err != nil {
		t.Fatalf("export removed %s, which was there before: %v", dest, err)
	}
}

// internalPrefixRE matches an internal package's prefix ("config: ") at
// the start of a message or after ": " (a wrapped error).
var internalPrefixRE = regexp.MustCompile(`(^|: )(backing|bind|config|content|core|fault|forwardfs|fresh|fsck|fuseserver|fuseuring|kdf|keys|keyslot|layers|meta|mount|names|reversefs|session|siv|tree|uring|vault|upgrade): `)

// TestErrorsArePlain runs the first hour's mistakes and wants each to end
// with one line on stderr that names no internal package and, where
// there is a next step, names it.
func TestErrorsArePlain(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2")
	pf, bad := writePassfile(t, "pw"), writePassfile(t, "wrong")
	src := t.TempDir()
	if err := os.Mkdir(filepath.Join(src, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "sub", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/f", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	run(t, "", "import", "--passfile", pf, dir, src).want(t, 0)

	corrupt, _ := newVault(t, "pw", "--format", "2")
	conf := filepath.Join(corrupt, "encryptfs.conf")
	if err := os.Chmod(conf, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(t.TempDir(), "full")
	if err := os.MkdirAll(filepath.Join(full, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	notVault := t.TempDir()

	for _, tc := range []struct {
		name string
		code int
		want string // in the line: the next step
		args []string
	}{
		{"wrong password", ExitWrongPassword, "encryptfs info", []string{"ls", "--passfile", bad, dir}},
		{"missing config", ExitCipherDir, "encryptfs init", []string{"ls", "--passfile", pf, notVault}},
		{"corrupt config", ExitCorruptConfig, "backup", []string{"ls", "--passfile", pf, corrupt}},
		{"missing CIPHERDIR", ExitCipherDir, "does not exist", []string{"fsck", "--passfile", pf, filepath.Join(notVault, "nope")}},
		{"bad -o", ExitUsage, "encryptfs mount --help", []string{"mount", "-o", "garbage", dir, t.TempDir()}},
		{"cat a symlink", ExitError, "encryptfs ls -l", []string{"cat", "--passfile", pf, dir, "/link"}},
		{"cat a directory", ExitError, "encryptfs ls", []string{"cat", "--passfile", pf, dir, "/sub"}},
		{"cat a missing file", ExitError, "encryptfs ls -R", []string{"cat", "--passfile", pf, dir, "/nope"}},
		{"export into a non-empty dir", ExitError, "empty or new directory", []string{"export", "--passfile", pf, dir, full}},
		{"key remove arg count", ExitUsage, "encryptfs key remove --help", []string{"key", "remove", dir}},
		{"ls arg count", ExitUsage, "encryptfs ls --help", []string{"ls"}},
		{"unknown keyfile", ExitPassword, "nokey", []string{"ls", "--keyfile", filepath.Join(notVault, "nokey"), dir}},
		{"missing passfile", ExitPassword, "nofile", []string{"ls", "--passfile", filepath.Join(notVault, "nofile"), dir}},
		{"import a missing SRC", ExitError, "does not exist", []string{"import", "--passfile", pf, dir, filepath.Join(notVault, "nope")}},
		{"encrypt-path of a missing dir", ExitError, "encryptfs ls -R", []string{"encrypt-path", "--passfile", pf, dir, "/nodir/x"}},
		{"decrypt-path of a foreign name", ExitCorruptData, "", []string{"decrypt-path", "--passfile", pf, dir, "nosuch"}},
		{"init into a vault", ExitCipherDir, "empty or new directory", []string{"init", "--passfile", pf, dir}},
		{"unknown command", ExitUsage, "encryptfs --help", []string{"remove"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "", tc.args...)
			r.want(t, tc.code)
			line := strings.TrimSuffix(r.stderr, "\n")
			if strings.Contains(line, "\n") || !strings.HasPrefix(line, "encryptfs: ") {
				t.Fatalf("stderr is not one encryptfs: line:\n%s", r.stderr)
			}
			msg := strings.TrimPrefix(line, "encryptfs: ")
			msg = strings.TrimPrefix(msg, tc.args[0]+": ") // the command's own prefix
			if m := internalPrefixRE.FindString(msg); m != "" {
				t.Errorf("internal prefix %q in %q", m, line)
			}
			if !strings.Contains(line, tc.want) {
				t.Errorf("%q does not say %q", line, tc.want)
			}
		})
	}

	// An edited KDF parameter reads the same in mount and fsck (either
	// makes the key unwrap fail).
	edited, _ := newVault(t, "pw")
	conf = filepath.Join(edited, "encryptfs.conf")
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	b2 := regexp.MustCompile(`"Time": *\d+`).ReplaceAll(b, []byte(`"Time": 2`))
	if bytes.Equal(b, b2) {
		t.Fatal("no KDF time in the config to edit")
	}
	if err := os.Chmod(conf, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, b2, 0o600); err != nil {
		t.Fatal(err)
	}
	m := run(t, "", "mount", "--passfile", pf, edited, t.TempDir())
	m.want(t, ExitWrongPassword)
	f := run(t, "", "fsck", "--passfile", pf, edited)
	f.want(t, ExitWrongPassword)
	if m.stderr != f.stderr || !strings.Contains(f.stderr, "edited") {
		t.Errorf("mount and fsck disagree on an edited config:\n%s%s", m.stderr, f.stderr)
	}
}

// TestVersionNamesCommitAndGoFuse builds the binary as the README does
// (commit through -ldflags -X) and wants --version and version to name
// the commit, the Go version and go-fuse's version.
func TestVersionNamesCommitAndGoFuse(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "encryptfs")
	const rev = "abc1234"
	out, err := exec.Command("go", "build", "-ldflags", "-X github.com/encryptfs/encryptfs/internal/cli.commit="+rev, "-o", bin, "github.com/encryptfs/encryptfs/cmd/encryptfs").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, arg := range []string{"--version", "version"} {
		got, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"encryptfs " + Version + "\n", "commit " + rev + "\n", runtime.Version() + ", go-fuse v2."} {
			if !strings.Contains(string(got), want) {
				t.Errorf("%s: %q lacks %q", arg, got, want)
			}
		}
	}
}

// TestImportExportCopyContents: import and export copy a directory's
// contents (rsync's "SRC/" rule) and a file under its name, as their
// --help says.
func TestImportExportCopyContents(t *testing.T) {
	for _, cmd := range []string{"import", "export"} {
		r := run(t, "", cmd, "--help")
		r.want(t, 0)
		if !strings.Contains(r.stdout, `"rsync -a`) || !strings.Contains(r.stdout, "contents, not") {
			t.Errorf("%s --help does not state the rsync SRC/ rule:\n%s", cmd, r.stdout)
		}
	}
	dir, _ := newVault(t, "pw", "--format", "2")
	pf := writePassfile(t, "pw")
	src := filepath.Join(t.TempDir(), "Documents")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "sub", "a"), []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	note := filepath.Join(t.TempDir(), "note.txt")
	if err := os.WriteFile(note, []byte("n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, "", "import", "--passfile", pf, dir, src, "/docs").want(t, 0)
	run(t, "", "import", "--passfile", pf, dir, note).want(t, 0)
	r := run(t, "", "ls", "-R", "--passfile", pf, dir)
	r.want(t, 0)
	if got := strings.Fields(r.stdout); strings.Join(got, " ") != "docs note.txt docs/sub docs/sub/a" {
		t.Fatalf("import made %q, want the contents of SRC under /docs and note.txt at the root", got)
	}
	out := filepath.Join(t.TempDir(), "out")
	run(t, "", "export", "--passfile", pf, dir, out, "/docs").want(t, 0)
	if _, err := os.Stat(filepath.Join(out, "sub", "a")); err != nil {
		t.Errorf("export of /docs did not put its contents into DESTDIR: %v", err)
	}
	out2 := filepath.Join(t.TempDir(), "out")
	run(t, "", "export", "--passfile", pf, dir, out2, "/note.txt").want(t, 0)
	if _, err := os.Stat(filepath.Join(out2, "note.txt")); err != nil {
		t.Errorf("export of a file did not make DESTDIR/NAME: %v", err)
	}
}

// TestFreshnessForgetPrune: forget and prune list what they would remove,
// remove it with --yes, and leave seen/ and recent state alone.
func TestFreshnessForgetPrune(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state) // the binary inherits it
	root := filepath.Join(state, "encryptfs")
	pf := writePassfile(t, "pw")
	stateOf := func(dir string) string {
		t.Helper()
		note := filepath.Join(t.TempDir(), "note")
		must(t, os.WriteFile(note, []byte("x"), 0o600))
		run(t, "", "import", "--passfile", pf, dir, note, fmt.Sprintf("/%d", time.Now().UnixNano())).want(t, 0) // import records freshness
		b, err := os.ReadFile(filepath.Join(dir, "encryptfs.conf"))
		must(t, err)
		var conf struct{ Params struct{ VaultID []byte } }
		must(t, json.Unmarshal(b, &conf))
		sd := filepath.Join(root, hex.EncodeToString(conf.Params.VaultID))
		if _, err := os.Stat(filepath.Join(sd, "state.json")); err != nil {
			t.Fatalf("no state for %s: %v", dir, err)
		}
		return sd
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	a, _ := newVault(t, "pw", "--format", "2")
	sa := stateOf(a)
	r := run(t, "", "freshness", "forget", a)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "would remove "+sa) || !exists(sa) {
		t.Fatalf("forget without --yes: %q; state there: %v", r.stdout, exists(sa))
	}
	r = run(t, "", "freshness", "forget", "--yes", a)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "removed "+sa) || exists(sa) {
		t.Fatalf("forget --yes: %q; state there: %v", r.stdout, exists(sa))
	}
	run(t, "", "freshness", "forget", "--yes", a).want(t, ExitError)
	run(t, "", "freshness", "forget").want(t, ExitUsage)
	run(t, "", "freshness", "forget", "--vault-id", "xyz").want(t, ExitUsage)
	sa = stateOf(a)
	run(t, "", "freshness", "forget", "--yes", "--vault-id", filepath.Base(sa)).want(t, 0)
	if exists(sa) {
		t.Fatal("forget --vault-id left the state")
	}

	// prune: a's state last used 400 days ago, b's now.
	sa = stateOf(a)
	b, _ := newVault(t, "pw", "--format", "2")
	sb := stateOf(b)
	old := time.Now().Add(-400 * 24 * time.Hour)
	ents, err := os.ReadDir(sa)
	must(t, err)
	for _, e := range ents {
		must(t, os.Chtimes(filepath.Join(sa, e.Name()), old, old))
	}
	must(t, os.Chtimes(sa, old, old))
	seen, err := os.ReadDir(filepath.Join(root, "seen"))
	if err != nil || len(seen) == 0 {
		t.Fatalf("no seen/ memory to keep: %v", err)
	}
	r = run(t, "", "freshness", "prune")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "would remove "+sa) || strings.Contains(r.stdout, sb) || !exists(sa) {
		t.Fatalf("prune dry run:\n%s", r.stdout)
	}
	r = run(t, "", "freshness", "prune", "--yes")
	r.want(t, 0)
	if exists(sa) || !exists(sb) {
		t.Fatalf("prune --yes: old state there %v, recent state there %v\n%s", exists(sa), exists(sb), r.stdout)
	}
	if after, _ := os.ReadDir(filepath.Join(root, "seen")); len(after) != len(seen) {
		t.Fatalf("prune touched seen/: %d files, had %d", len(after), len(seen))
	}
	r = run(t, "", "freshness", "prune", "--days", "1")
	r.want(t, 0)
	if !strings.Contains(r.stdout, "nothing to prune") {
		t.Fatalf("prune with only recent state:\n%s", r.stdout)
	}
}
