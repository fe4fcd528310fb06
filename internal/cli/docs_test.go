package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func testRoot() *cobra.Command {
	return (&App{Stdout: io.Discard, Stderr: io.Discard}).newRootCommand()
}

// TestHelpGroups: --help lists the commands by group and a command's
// flags by section; hidden flags stay out.
func TestHelpGroups(t *testing.T) {
	r := run(t, "", "--help")
	r.want(t, 0)
	for _, want := range []string{"Vault commands:", "Mount commands:", "Offline tools (no FUSE):", "Other commands:", "-v, --version"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("encryptfs --help lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, c := range testRoot().Commands() {
		if !strings.Contains(r.stdout, "\n  "+c.Name()+" ") {
			t.Errorf("encryptfs --help lacks command %s", c.Name())
		}
	}
	r = run(t, "", "mount", "--help")
	r.want(t, 0)
	last := -1
	for _, section := range []string{"\nUnlock:\n", "\nMount:\n", "\nReverse mode:\n", "\nAdvanced:\n", "\nFlags:\n"} {
		i := strings.Index(r.stdout, section)
		if i < last {
			t.Errorf("mount --help: section %q missing or out of order:\n%s", section, r.stdout)
		}
		last = i
	}
	for _, want := range []string{"--passfile FILE", "-f, --foreground", "-o, --options OPTIONS", "--exclude PATTERN", "--transport"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("mount --help lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "internal") {
		t.Errorf("mount --help shows a hidden flag:\n%s", r.stdout)
	}
	// The old spellings of help work too.
	for _, args := range [][]string{{"mount", "-h"}, {"help", "mount"}, {"mount", "-help"}} {
		if r2 := run(t, "", args...); r2.code != 0 || !strings.Contains(r2.stdout, "\nUnlock:\n") {
			t.Errorf("%q: exit %d\n%s", args, r2.code, r2.stdout)
		}
	}
}

// TestSingleDashDeprecated: gocryptfs-style -flag still works on the real
// binary, with one warning line; --flag warns nothing.
func TestSingleDashDeprecated(t *testing.T) {
	dir, _ := newVault(t, "pw")
	r := run(t, "", "info", "-json", dir)
	r.want(t, 0)
	if r.stderr != "encryptfs: -json is deprecated, use --json\n" || !strings.HasPrefix(r.stdout, "{") {
		t.Errorf("info -json: stderr %q, stdout %q", r.stderr, r.stdout)
	}
	r = run(t, "", "info", "--json", dir)
	r.want(t, 0)
	if r.stderr != "" {
		t.Errorf("info --json: stderr %q", r.stderr)
	}
	pf := writePassfile(t, "pw")
	r = run(t, "", "ls", "-passfile", pf, dir)
	r.want(t, 0)
	if r.stderr != "encryptfs: -passfile is deprecated, use --passfile\n" {
		t.Errorf("ls -passfile: stderr %q", r.stderr)
	}
	// A wrong flag stays a usage error with one line.
	r = run(t, "", "ls", "-passfle", pf, dir)
	r.want(t, ExitUsage)
	if strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q", r.stderr)
	}
}

// TestManPagesCurrent: the committed docs/man pages are what cobra's
// generator writes from the command tree (scripts/gen-docs.sh), page for
// page; encryptfs man prints encryptfs(1) and man --dir writes the set.
func TestManPagesCurrent(t *testing.T) {
	pages, err := manPages(testRoot())
	if err != nil {
		t.Fatal(err)
	}
	committed := readManDir(t, "../../docs/man")
	if !equalPages(pages, committed) {
		t.Fatalf("docs/man is out of date (generated %s, committed %s): run scripts/gen-docs.sh and commit it",
			pageNames(pages), pageNames(committed))
	}
	r := run(t, "", "man")
	r.want(t, 0)
	if r.stdout != string(pages["encryptfs.1"]) {
		t.Fatal("encryptfs man differs from docs/man/encryptfs.1")
	}
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "encryptfs-gone.1"), []byte("stale"), 0o644))
	run(t, "", "man", "--dir", dir).want(t, 0)
	if got := readManDir(t, dir); !equalPages(pages, got) {
		t.Fatalf("man --dir wrote %s", pageNames(got))
	}
	for _, c := range testRoot().Commands() {
		if !c.IsAvailableCommand() {
			continue // help
		}
		page, ok := pages["encryptfs-"+c.Name()+".1"]
		if !ok {
			t.Errorf("no page for %s", c.Name())
			continue
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !bytes.Contains(page, []byte("--"+f.Name)) {
				t.Errorf("encryptfs-%s.1 lacks --%s", c.Name(), f.Name)
			}
			if f.Hidden && bytes.Contains(page, []byte(f.Name)) {
				t.Errorf("encryptfs-%s.1 shows hidden --%s", c.Name(), f.Name)
			}
		})
	}
	if bytes.Contains(pages["encryptfs.1"], []byte("Auto generated")) {
		t.Error("the pages carry cobra's dated auto-generated tag")
	}
}

// TestManPagesSections: every page has EXIT STATUS (every code), EXAMPLES,
// ENVIRONMENT and FILES, and names flag values by placeholder, never by
// cobra's raw type or a bool's [=false]; man --dir makes a missing
// directory.
func TestManPagesSections(t *testing.T) {
	pages, err := manPages(testRoot())
	if err != nil {
		t.Fatal(err)
	}
	rawType := regexp.MustCompile(`--[a-z-]+\\fP?(\[=|=| (int|uint|string|stringArray|duration)\b)|--[a-z-]+ (int|uint|string|stringArray|duration)\\fP`)
	for name, page := range pages {
		for _, section := range []string{".SH EXIT STATUS", ".SH EXAMPLES", ".SH ENVIRONMENT", ".SH FILES"} {
			if !bytes.Contains(page, []byte(section+"\n")) {
				t.Errorf("%s lacks %s", name, section)
			}
		}
		for _, e := range exitCodeDocs {
			if !bytes.Contains(page, []byte(fmt.Sprintf("\\fB%d\\fP", e.code))) {
				t.Errorf("%s: EXIT STATUS lacks %d", name, e.code)
			}
		}
		for _, env := range []string{"ENCRYPTFS_TRANSPORT", "CREDENTIALS_DIRECTORY", "XDG_STATE_HOME", "HOME"} {
			if !bytes.Contains(page, []byte(env)) {
				t.Errorf("%s: ENVIRONMENT lacks %s", name, env)
			}
		}
		if m := rawType.Find(page); m != nil {
			t.Errorf("%s names a flag's value by its raw type: %q", name, m)
		}
	}
	mount := string(pages["encryptfs-mount.1"])
	for _, want := range []string{`\fB--ro\fP`, `\fB--idle DURATION\fP`, `\fB-o, --options OPTIONS\fP`} {
		if !strings.Contains(mount, want) {
			t.Errorf("encryptfs-mount.1 lacks %q", want)
		}
	}
	if !strings.Contains(string(pages["encryptfs-init.1"]), `\fB--format N\fP`) {
		t.Error("encryptfs-init.1 does not say --format N")
	}
	dir := filepath.Join(t.TempDir(), "new", "man1")
	run(t, "", "man", "--dir", dir).want(t, 0)
	if got := readManDir(t, dir); !equalPages(pages, got) {
		t.Fatalf("man --dir into a missing directory wrote %s", pageNames(got))
	}
}

// TestHelpListsExitCodes: encryptfs --help and every command's --help
// list every exit code after the usage, for a binary installed without
// docs/cli.md.
func TestHelpListsExitCodes(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.HasParent() && !c.IsAvailableCommand() {
			return
		}
		paths = append(paths, path)
		for _, child := range c.Commands() {
			walk(child, append(slices.Clone(path), child.Name()))
		}
	}
	walk(testRoot(), nil)
	for _, path := range paths {
		r := run(t, "", append(path, "--help")...)
		r.want(t, 0)
		usage, status := strings.Index(r.stdout, "Usage:"), strings.Index(r.stdout, "\nExit status:\n")
		if usage < 0 || status < usage {
			t.Errorf("%v --help: no exit status after the usage:\n%s", path, r.stdout)
			continue
		}
		for _, e := range exitCodeDocs {
			if !regexp.MustCompile(fmt.Sprintf(`(?m)^ +%d  \S`, e.code)).MatchString(r.stdout[status:]) {
				t.Errorf("%v --help lacks exit code %d", path, e.code)
			}
		}
		if strings.Contains(r.stdout, "[=false]") || regexp.MustCompile(`--[a-z-]+ (int|uint|string|stringArray|duration) `).MatchString(r.stdout) {
			t.Errorf("%v --help names a flag's value by its raw type:\n%s", path, r.stdout)
		}
	}
	if len(paths) < 20 {
		t.Fatalf("walked only %d commands", len(paths))
	}
}

// TestEveryCommandHasExamples: --help and the manual page show examples
// for each command.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasParent() && !c.IsAvailableCommand() && c.Name() != "help" {
			return
		}
		if c.Example == "" {
			t.Errorf("%s has no examples (commandExamples)", c.CommandPath())
		}
		for _, child := range c.Commands() {
			walk(child)
		}
	}
	walk(testRoot())
}

func readManDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Base(n)] = b
	}
	return pages
}

func equalPages(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for name, page := range a {
		if !bytes.Equal(page, b[name]) {
			return false
		}
	}
	return true
}

func pageNames(pages map[string][]byte) string {
	var names []string
	for n := range pages {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// TestCompletion: cobra's scripts for the four shells, each non-empty and
// naming the program; bash (and zsh, fish where installed) parse them.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		t.Run(shell, func(t *testing.T) {
			r := run(t, "", "completion", shell)
			r.want(t, 0)
			if len(r.stdout) < 500 || !strings.Contains(r.stdout, "encryptfs") {
				t.Fatalf("script:\n%s", r.stdout)
			}
			check := map[string][]string{"bash": {"-n"}, "zsh": {"-n"}, "fish": {"--no-execute"}}[shell]
			if check == nil {
				return
			}
			sh, err := exec.LookPath(shell)
			if err != nil {
				if shell == "bash" {
					t.Fatal("bash not found")
				}
				t.Logf("%s not installed: script not parsed", shell)
				return
			}
			cmd := exec.Command(sh, check...)
			cmd.Stdin = strings.NewReader(r.stdout)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s %v: %v\n%s", shell, check, err, out)
			}
		})
	}
	run(t, "", "completion", "tcsh").want(t, ExitUsage)
	run(t, "", "completion").want(t, ExitUsage)
}

// TestCompletionWorks asks the binary what the scripts ask it at
// completion time (encryptfs __complete ARGS...).
func TestCompletionWorks(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // all must be offered
		not  string   // must not be offered
		dirs bool     // directive: directories only
	}{
		{[]string{"mo"}, []string{"mount"}, "init", false},
		{[]string{"mount", "--pass"}, []string{"--passfile"}, "--new-passfile", false},
		{[]string{"passwd", "--new"}, []string{"--new-passfile", "--new-extpass"}, "--passfile", false},
		{[]string{"unmount", "--"}, []string{"--lazy"}, "--passfile", false},
		{[]string{"mount", "--"}, []string{"--foreground"}, "--internal-notify-fd", false},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish", "powershell"}, "mount", false},
		{[]string{"mount", ""}, nil, "--passfile", true},
		{[]string{"mount", "a", ""}, nil, "", true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(t, "", append([]string{"__completeNoDesc"}, tc.args...)...)
			r.want(t, 0)
			got := "\n" + r.stdout
			for _, w := range tc.want {
				if !strings.Contains(got, "\n"+w+"\n") {
					t.Errorf("%q not offered; got %q", w, r.stdout)
				}
			}
			if tc.not != "" && strings.Contains(got, "\n"+tc.not+"\n") {
				t.Errorf("%q offered; got %q", tc.not, r.stdout)
			}
			// ":16" is cobra's ShellCompDirectiveFilterDirs.
			if isDirs := strings.Contains(got, "\n:16\n"); isDirs != tc.dirs {
				t.Errorf("directories only: %v, want %v; got %q", isDirs, tc.dirs, r.stdout)
			}
		})
	}
}
