package cli

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unitLines returns the Key=value settings of a unit file, in order.
func unitLines(t *testing.T, path string) [][2]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: bad line %q", path, line)
		}
		out = append(out, [2]string{k, v})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// splitUnitCommand splits an Exec line like systemd: words separated by
// spaces, double quotes group words; %i and ${VAR} are expanded.
func splitUnitCommand(line string, vars map[string]string) []string {
	line = strings.ReplaceAll(line, "%i", vars["%i"])
	var words []string
	var cur strings.Builder
	inQuote, inWord := false, false
	for _, r := range line {
		switch {
		case r == '"':
			inQuote, inWord = !inQuote, true
		case r == ' ' && !inQuote:
			if inWord {
				words = append(words, os.Expand(cur.String(), func(k string) string { return vars[k] }))
			}
			cur.Reset()
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, os.Expand(cur.String(), func(k string) string { return vars[k] }))
	}
	return words
}

// checkCommandLine parses args (without the program name) as Run does,
// with the command's own flags and argument count, without running it.
func checkCommandLine(args []string) error {
	a := &App{Stdout: io.Discard, Stderr: io.Discard}
	root := a.newRootCommand()
	argv, err := a.resolveArgs(root, args)
	if err != nil {
		return err
	}
	cmd, rest, err := root.Find(argv)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	return cmd.ValidateArgs(cmd.Flags().Args())
}

// TestSystemdUnits checks the contrib/systemd examples: their encryptfs
// command lines and mount options are accepted by the CLI's own parsers,
// and systemd-analyze verify (where installed) finds nothing to complain
// about.
func TestSystemdUnits(t *testing.T) {
	const dir = "../../contrib/systemd"
	vars := map[string]string{"%i": "vault", "CIPHERDIR": "/srv/vault", "MOUNTPOINT": "/mnt/vault"}
	execs := 0
	units, err := filepath.Glob(filepath.Join(dir, "*.*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, unit := range units {
		if strings.HasSuffix(unit, ".md") {
			continue
		}
		for _, kv := range unitLines(t, unit) {
			switch kv[0] {
			case "ExecStart", "ExecStop":
				args := splitUnitCommand(kv[1], vars)
				if filepath.Base(args[0]) != "encryptfs" {
					t.Errorf("%s: %s runs %s", unit, kv[0], args[0])
					continue
				}
				if err := checkCommandLine(args[1:]); err != nil {
					t.Errorf("%s: %s: %v", unit, kv[0], err)
				}
				execs++
			case "Options":
				var m mountFlags
				if err := m.parseOptions(kv[1]); err != nil {
					t.Errorf("%s: Options: %v", unit, err)
				}
				if len(m.extra) > 0 {
					t.Errorf("%s: options %v would go to the kernel", unit, m.extra)
				}
				if m.unlock.src.passfile == "" && m.unlock.src.extpass == "" && len(m.unlock.credentials) == 0 && len(m.unlock.keyfiles) == 0 {
					t.Errorf("%s: no password or credential source in Options", unit)
				}
			}
		}
	}
	if execs < 2 {
		t.Fatalf("found %d encryptfs command lines in %s", execs, dir)
	}
	// The check rejects what the CLI would reject.
	for _, line := range []string{
		`/e mount --extpas "x y" ${CIPHERDIR} ${MOUNTPOINT}`,
		`/e mount --extpass x y ${CIPHERDIR} ${MOUNTPOINT}`,
		`/e unmount`,
		`/e mount-all`,
	} {
		if err := checkCommandLine(splitUnitCommand(line, vars)[1:]); err == nil {
			t.Errorf("%s: accepted", line)
		}
	}
	if got := splitUnitCommand(`/e mount --extpass "a b %i" ${CIPHERDIR}`, vars); strings.Join(got, "|") != "/e|mount|--extpass|a b vault|/srv/vault" {
		t.Errorf("splitUnitCommand: %q", got)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: units only checked against the CLI")
		return
	}
	// verify wants the programs to exist: point the units at the built one.
	tmp := t.TempDir()
	var verify []string
	for _, unit := range units {
		if strings.HasSuffix(unit, ".md") {
			continue
		}
		data, err := os.ReadFile(unit)
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.ReplaceAll(string(data), "/usr/local/bin/encryptfs", binary))
		name := filepath.Base(unit)
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		verify = append(verify, "./"+strings.Replace(name, "@.", "@vault.", 1))
	}
	cmd := exec.Command(analyze, append([]string{"verify", "--man=no"}, verify...)...)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
