package fsck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// TestShadowedConflictCopy: two copies of a long-name entry shown under
// the same name ("encryptfs.long.<H> (1)" and "encryptfs.long (1).<H>")
// are both reported; the one the mount hides (the higher backing name)
// says so and is salvaged under its backing name, so the two never
// collide in the salvage directory.
func TestShadowedConflictCopy(t *testing.T) {
	fx := newFixture(t)
	p := fx.abs(t, "/"+longName)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	bn := filepath.Base(p)
	h := strings.TrimPrefix(bn, names.LongNamePrefix)
	appended, inserted := bn+" (1)", "encryptfs.long (1)."+h
	writeFile(t, filepath.Join(filepath.Dir(p), appended), data)
	writeFile(t, filepath.Join(filepath.Dir(p), inserted), data)
	dest := filepath.Join(t.TempDir(), "out")
	rep := fx.check(t, Options{Salvage: dest})
	want := []problemKey{
		{KindConflict, appended, "/" + longName + " (1)"},
		{KindConflict, inserted, "/" + longName + " (1)"},
	}
	if got := keysOf(rep); !sameKeys(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for _, pr := range rep.Problems {
		if hidden := strings.Contains(pr.Detail, "hidden"); hidden != (pr.CipherPath == appended) {
			t.Errorf("%s: %q", pr.CipherPath, pr.Detail)
		}
	}
	for _, name := range []string{longName + " (1)", undecryptableName(appended)} {
		if got, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(got) != string(fx.files["/"+longName]) {
			t.Errorf("salvaged %q: %v", name, err)
		}
	}
}
