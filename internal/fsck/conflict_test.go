package fsck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

func TestLongNameConflictCopy(t *testing.T) {
	fx := newFixture(t)
	p := fx.abs(t, "/"+longName)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	side, err := os.ReadFile(p + names.LongNameSuffix)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p+" (1)", data)
	writeFile(t, p+".sync-conflict-20261122-101010-XXXXXXX"+names.LongNameSuffix, side)
	// Syncthing puts its suffix before what looks like an extension.
	bn := filepath.Base(p)
	h := strings.TrimPrefix(bn, names.LongNamePrefix)
	before := "encryptfs.long.sync-conflict-20261122-101010-YYYYYYY." + h
	writeFile(t, filepath.Join(filepath.Dir(p), before), data)
	dest := filepath.Join(t.TempDir(), "out")
	rep := fx.check(t, Options{Salvage: dest})
	want := []problemKey{
		{KindConflict, bn + " (1)", "/" + longName + " (1)"},
		{KindConflict, before, "/" + longName + ".sync-conflict-20261122-101010-YYYYYYY"},
		{KindOrphanSidecar, bn + ".sync-conflict-20261122-101010-XXXXXXX" + names.LongNameSuffix, ""},
	}
	if got := keysOf(rep); !sameKeys(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for _, name := range []string{longName + " (1)", longName + ".sync-conflict-20261122-101010-YYYYYYY"} {
		if got, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(got) != string(fx.files["/"+longName]) {
			t.Errorf("conflict copy salvage %q: %v", name, err)
		}
	}
}
