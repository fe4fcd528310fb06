package fsck

import (
	"os"
	"testing"
)

// TestPrescanCountsLongCopies: the progress prescan counts the files the
// check walks, a sync tool's copy of a long-name entry
// ("encryptfs.long.<H> (1)") among them: it takes entries by the one
// rule (tree.IsEntryName) the check, the listing and freshness use.
// Before, it skipped every reserved name but a long one, and its total
// fell short of the check's by each such copy.
func TestPrescanCountsLongCopies(t *testing.T) {
	fx := newFixture(t)
	p := fx.abs(t, "/"+longName)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p+" (1)", data)
	var first Progress
	calls := 0
	rep := fx.check(t, Options{Progress: func(pr Progress) {
		if calls == 0 {
			first = pr
		}
		calls++
	}})
	if calls == 0 {
		t.Fatal("no progress reported")
	}
	if first.TotalFiles != rep.Summary.Files || first.TotalBytes != rep.Summary.PlainBytes {
		t.Fatalf("prescan: %d files, %d bytes; the check: %d files, %d bytes", first.TotalFiles, first.TotalBytes, rep.Summary.Files, rep.Summary.PlainBytes)
	}
}
