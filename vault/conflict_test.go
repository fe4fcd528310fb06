package vault

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestConflictCopy: a sync tool's conflict copy is found by every
// operation as the mount finds it (one resolver): listed, read, stat'ed
// and read through a conflict copy of a directory; it is read-only
// (EROFS) until adopted by a rename, and removable. A copy with any other
// suffix is not listed or reachable.
func TestConflictCopy(t *testing.T) {
	v, dir := newTestVault(t)
	if err := v.MkdirAll("docs", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile("docs/report.txt", []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := v.EncryptPath("docs")
	must(t, err)
	rel, err := v.EncryptPath("docs/report.txt")
	must(t, err)
	src := filepath.Join(dir, rel)
	const sync = ".sync-conflict-20261122-101010-ABCDEFG"
	cpDir(t, filepath.Join(dir, docs), filepath.Join(dir, docs)+" (1)")
	must(t, os.Link(src, src+sync))
	must(t, os.Link(src, src+"\u202etxt.sh"))

	got, err := v.ReadFile("docs/report.txt" + sync)
	if err != nil || string(got) != "v1" {
		t.Fatalf("ReadFile(conflict copy) = %q, %v", got, err)
	}
	if got, err := v.ReadFile("docs (1)/report.txt"); err != nil || string(got) != "v1" {
		t.Fatalf("ReadFile in conflict copy of a directory = %q, %v", got, err)
	}
	ents, err := v.ReadDir("docs")
	var bad *BadEntriesError
	if !errors.As(err, &bad) || len(bad.Backing) != 1 {
		t.Fatalf("ReadDir: %v", err)
	}
	var listed []string
	for _, e := range ents {
		listed = append(listed, e.Name())
	}
	if !slices.Equal(listed, []string{"report.txt", "report.txt" + sync}) {
		t.Fatalf("listed %q", listed)
	}
	if _, err := v.ReadFile("docs/report.txt\u202etxt.sh"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("forged suffix reachable: %v", err)
	}
	for what, err := range map[string]error{
		"WriteFile": v.WriteFile("docs/report.txt"+sync, []byte("x"), 0o644),
		"Chmod":     v.Chmod("docs/report.txt"+sync, 0o600),
		"SetXattr":  v.SetXattr("docs/report.txt"+sync, "user.x", []byte("y")),
	} {
		if !errors.Is(err, unix.EROFS) {
			t.Errorf("%s on a conflict copy: %v, want EROFS", what, err)
		}
	}
	must(t, v.Rename("docs/report.txt"+sync, "docs/adopted.txt"))
	must(t, v.WriteFile("docs/adopted.txt", []byte("v2"), 0o644))
	if got, err := v.ReadFile("docs/adopted.txt"); err != nil || string(got) != "v2" {
		t.Fatalf("adopted copy: %q %v", got, err)
	}
	must(t, v.Remove("docs (1)/report.txt"))
	must(t, v.Remove("docs (1)"))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// cpDir copies a backing directory (files only, one level), as a sync tool
// would.
func cpDir(t *testing.T, from, to string) {
	t.Helper()
	must(t, os.Mkdir(to, 0o755))
	ents, err := os.ReadDir(from)
	must(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(to, e.Name()), b, 0o644))
	}
}
