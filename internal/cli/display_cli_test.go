package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLsEscapesNames: names with control and bidi characters, which the
// storage or another user may have chosen, are printed Go-quoted by ls,
// never raw; ordinary UTF-8 names are printed as they are. A sync tool's
// conflict copy is listed and read by cat, as the mount shows it.
func TestLsEscapesNames(t *testing.T) {
	src := t.TempDir()
	names := map[string]string{
		"evil\u202etxt.sh": `"evil\u202etxt.sh"`,
		"two\nlines":       `"two\nlines"`,
		"esc\x1b[2J":       `"esc\x1b[2J"`,
		"café":             "café",
	}
	for n := range names {
		if err := os.WriteFile(filepath.Join(src, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	run(t, "", "import", "--passfile", pf, dir, src).want(t, 0)
	r := run(t, "", "ls", "--passfile", pf, dir)
	r.want(t, 0)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != len(names) {
		t.Fatalf("ls printed %d lines, want %d:\n%s", len(lines), len(names), r.stdout)
	}
	for _, want := range names {
		found := false
		for _, l := range lines {
			found = found || l == want
		}
		if !found {
			t.Errorf("ls output lacks %s:\n%s", want, r.stdout)
		}
	}
	if strings.ContainsAny(r.stdout, "\u202e\x1b") {
		t.Fatalf("ls printed raw control or bidi characters: %q", r.stdout)
	}

	// A conflict copy: cat reaches it as the mount does.
	r = run(t, "", "encrypt-path", "--passfile", pf, dir, "café")
	r.want(t, 0)
	enc := filepath.Join(dir, strings.TrimSpace(r.stdout))
	data, err := os.ReadFile(enc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(enc+" (1)", data, 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "cat", "--passfile", pf, dir, "café (1)")
	r.want(t, 0)
	if r.stdout != "x" {
		t.Fatalf("cat of a conflict copy = %q", r.stdout)
	}
}
