package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestDescribeCommands(t *testing.T) {
	specs := describeCommands()
	if len(specs) != len(commands()) {
		t.Fatalf("%d specs for %d commands", len(specs), len(commands()))
	}
	byName := map[string]cmdSpec{}
	for _, s := range specs {
		byName[s.name] = s
	}
	// Every command reached its flag parser (so its flags are documented)
	// and spot checks of what the parsers define.
	for _, tc := range []struct{ cmd, flag, arg string }{
		{"mount", "passfile", "string"},
		{"mount", "f", ""},
		{"mount", "idle", "duration"},
		{"init", "kdf-time", "n"},
		{"unmount", "lazy", ""},
		{"passwd", "new-extpass", "string"},
	} {
		found := false
		for _, f := range byName[tc.cmd].flags {
			if f.name == tc.flag {
				found = true
				if f.arg != tc.arg {
					t.Errorf("%s %s: arg %q, want %q", tc.cmd, tc.flag, f.arg, tc.arg)
				}
			}
		}
		if !found {
			t.Errorf("%s: flag %s not described", tc.cmd, tc.flag)
		}
	}
	for _, f := range byName["mount"].flags {
		if strings.HasPrefix(f.name, "internal") {
			t.Errorf("internal flag %s is documented", f.name)
		}
	}
	if byName["cat"].argsUsage != "CIPHERDIR PATH..." {
		t.Errorf("cat args %q", byName["cat"].argsUsage)
	}
}

func TestManPageCurrent(t *testing.T) {
	var buf bytes.Buffer
	writeMan(&buf, describeCommands())
	committed, err := os.ReadFile("../../docs/man/encryptfs.1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), committed) {
		t.Fatal("docs/man/encryptfs.1 is out of date: run scripts/gen-docs.sh and commit it")
	}
	r := run(t, "", "man")
	r.want(t, 0)
	if r.stdout != buf.String() {
		t.Fatal("encryptfs man differs from writeMan")
	}
	man := buf.String()
	for _, s := range describeCommands() {
		if !strings.Contains(man, `.SS "encryptfs `+roff(s.name)) {
			t.Errorf("man page lacks command %s", s.name)
		}
		for _, f := range s.flags {
			if !strings.Contains(man, roff(f.dashed())) {
				t.Errorf("man page lacks %s %s", s.name, f.dashed())
			}
		}
	}
	for _, e := range exitCodeDocs {
		if e.meaning == "" {
			t.Errorf("exit code %d undocumented", e.code)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh"} {
		t.Run(shell, func(t *testing.T) {
			r := run(t, "", "completion", shell)
			r.want(t, 0)
			for _, s := range describeCommands() {
				if !strings.Contains(r.stdout, s.name) {
					t.Errorf("command %s missing", s.name)
				}
				for _, f := range s.flags {
					if !strings.Contains(r.stdout, f.dashed()) {
						t.Errorf("%s %s missing", s.name, f.dashed())
					}
				}
			}
			if sh, err := exec.LookPath(shell); err == nil {
				if out, err := exec.Command(sh, "-n", "-c", r.stdout).CombinedOutput(); err != nil {
					t.Fatalf("%s -n: %v\n%s", shell, err, out)
				}
			} else if shell == "bash" {
				t.Fatal("bash not found")
			}
		})
	}
	run(t, "", "completion", "fish").want(t, ExitUsage)
	run(t, "", "completion").want(t, ExitUsage)
}

// TestBashCompletionWorks runs the bash script's function on command lines.
func TestBashCompletionWorks(t *testing.T) {
	script := run(t, "", "completion", "bash").stdout
	for _, tc := range []struct {
		words string
		want  []string // all must be offered
		not   string   // must not be offered
	}{
		{"encryptfs mo", []string{"mount"}, "init"},
		{"encryptfs mount --pass", []string{"--passfile"}, "--new-passfile"},
		{"encryptfs passwd --new", []string{"--new-passfile", "--new-extpass"}, "--passfile"},
		{"encryptfs unmount -", []string{"--lazy"}, "--passfile"},
		{"encryptfs completion ", []string{"bash", "zsh"}, "mount"},
	} {
		t.Run(tc.words, func(t *testing.T) {
			words := strings.Fields(tc.words)
			if strings.HasSuffix(tc.words, " ") {
				words = append(words, "")
			}
			var quoted []string
			for _, w := range words {
				quoted = append(quoted, "'"+w+"'")
			}
			prog := script + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\n" +
				"COMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n_encryptfs\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
			out, err := exec.Command("bash", "-c", prog).CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			got := "\n" + string(out)
			for _, w := range tc.want {
				if !strings.Contains(got, "\n"+w+"\n") {
					t.Errorf("%q not offered; got %q", w, out)
				}
			}
			if strings.Contains(got, "\n"+tc.not+"\n") {
				t.Errorf("%q offered; got %q", tc.not, out)
			}
		})
	}
}
