package fsck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/vault"
)

// TestDuplicateDirIDs: three directories given one ID (one genuine, two
// copies) are each reported with the paths of the two others; the rest
// of the vault stays clean (docs/format.md §7, §11 "Directory IDs").
func TestDuplicateDirIDs(t *testing.T) {
	fx := newFixture(t)
	v, err := vault.Open(fx.dir, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a", "b", "c", "d"} {
		if err := v.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	v.Close()
	if rep := fx.check(t, Options{}); !rep.Clean {
		t.Fatalf("fixture not clean: %+v", rep.Problems)
	}
	id, err := os.ReadFile(filepath.Join(fx.abs(t, "/a"), names.DirIDFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/b", "/c"} {
		p := filepath.Join(fx.abs(t, d), names.DirIDFile)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, id, 0o400); err != nil {
			t.Fatal(err)
		}
	}
	rep := fx.check(t, Options{})
	var want []problemKey
	for _, d := range []string{"/a", "/b", "/c"} {
		want = append(want, problemKey{KindDupDirID, fx.backingPath(t, d) + "/" + names.DirIDFile, d})
	}
	if got := keysOf(rep); !sameKeys(got, want) {
		t.Fatalf("problems %v, want %v", got, want)
	}
	for _, p := range rep.Problems {
		for _, other := range []string{"/a", "/b", "/c"} {
			mentioned := strings.Contains(p.Detail, "("+other+")")
			if mentioned == (other == p.PlainPath) {
				t.Errorf("%s: detail %q should name exactly the other two directories", p.PlainPath, p.Detail)
			}
		}
	}
}
