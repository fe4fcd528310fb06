package fresh_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	fr "github.com/encryptfs/encryptfs/internal/fresh"
)

// TestOldUnrecordedState: a local state written before freshness was told
// changes by directory ID keeps a failed batch's names by backing path
// (Unrecorded.Dir). The next mount finds each such directory by its path
// once, and records just those names, as it does for a state written now:
// the file written in the failed mount is recorded, a deletion the
// storage made before is not adopted.
func TestOldUnrecordedState(t *testing.T) {
	t.Run("found", func(t *testing.T) { testOldUnrecordedState(t, false) })
	t.Run("gone", func(t *testing.T) { testOldUnrecordedState(t, true) })
}

// testOldUnrecordedState is TestOldUnrecordedState; gone: the state's
// path names no directory any more, and the mount records the whole tree
// (the deletion is adopted, as after a crash, and nothing else is left
// unrecorded).
func testOldUnrecordedState(t *testing.T, gone bool) {
	must := mustFor(t)
	dir, state := newVault(t)
	mnt, s, unmount := mountWriter(t, dir, state)
	must(os.Mkdir(filepath.Join(mnt, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(mnt, "b"), []byte("b"), 0o644))
	must(s.Freshness().Flush())
	must(unmount())
	must(os.Remove(backingName(t, dir, "b"))) // the storage deletes b

	mnt, _, unmount = mountWriter(t, dir, state)
	must(os.WriteFile(filepath.Join(mnt, "sub", "c"), []byte("written in the second mount"), 0o644))
	man := ownManifests(t, dir)
	must(os.Rename(man, man+".aside"))
	must(os.WriteFile(man, []byte("in the way"), 0o600))
	if err := unmount(); err == nil {
		t.Fatal("the last batch wrote through a file in place of the manifests directory")
	}
	must(os.Remove(man))
	must(os.Rename(man+".aside", man))

	// Write the state as before: each directory by its backing path.
	sub, err := filepath.Rel(dir, backingName(t, dir, "sub"))
	must(err)
	if gone {
		sub += "-not-there"
	}
	p := filepath.Join(state, "state.json")
	b, err := os.ReadFile(p)
	must(err)
	var st map[string]any
	must(json.Unmarshal(b, &st))
	us, _ := st["Unrecorded"].([]any)
	if len(us) == 0 {
		t.Fatalf("the failed mount kept no unrecorded names:\n%s", b)
	}
	for _, u := range us {
		m := u.(map[string]any)
		if m["ID"] == nil {
			t.Fatalf("an unrecorded name without its directory's ID: %v", m)
		}
		delete(m, "ID")
		m["Dir"] = sub
	}
	b, err = json.Marshal(st)
	must(err)
	must(os.WriteFile(p, b, 0o600))

	o := options(state, false)
	o.FreshnessStrict = true
	_, _, unmount = mountWith(t, dir, o)
	must(unmount())
	rep := status(t, dir, state)
	if gone {
		if rep.Status != fr.OK {
			t.Fatalf("the whole tree is not recorded:\n%s", rep)
		}
		return
	}
	if rep.Status == fr.OK || !strings.Contains(rep.String(), "/b: deleted") {
		t.Fatalf("b's deletion was adopted:\n%s", rep)
	}
	if strings.Contains(rep.String(), "/sub/c") {
		t.Fatalf("sub/c, kept by path in the old state, is not recorded:\n%s", rep)
	}
}
