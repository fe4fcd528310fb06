package cli

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCLIOpensVaultsOnlyThroughSession: the CLI knows no vault internals;
// it opens vaults through internal/session and the vault package only.
//
// exit.go is left out until its error classification moves out of the
// CLI (it still names the sentinels of content, names and tree).
func TestCLIOpensVaultsOnlyThroughSession(t *testing.T) {
	forbidden := []string{
		"internal/crypto/content", "internal/crypto/kdf", "internal/crypto/keys",
		"internal/crypto/names", "internal/core", "internal/tree",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "exit.go" {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == "github.com/encryptfs/encryptfs/"+bad {
					t.Errorf("%s imports %s", f, path)
				}
			}
		}
	}
}
