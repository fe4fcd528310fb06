package vault

import (
	"os"
	"testing"
)

// TestCreateRefusesUnprintableCreator: encryptfs info shows the Creator, so
// a new vault gets none with control characters or bidi overrides.
func TestCreateRefusesUnprintableCreator(t *testing.T) {
	for _, creator := range []string{"a\x1b[2J", "two\nlines", "rtl\u202eoverride", "bad\xffutf8"} {
		opts := cheap
		opts.Creator = creator
		dir := t.TempDir()
		if v, err := Create(dir, testPassword, opts); err == nil {
			v.Close()
			t.Fatalf("Create with Creator %q succeeded", creator)
		}
		if names, _ := os.ReadDir(dir); len(names) != 0 {
			t.Fatalf("Create with Creator %q left %d entries", creator, len(names))
		}
	}
	opts := cheap
	opts.Creator = "my app 1.0 (für Tests)"
	v, err := Create(t.TempDir(), testPassword, opts)
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
}
