package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/encryptfs/encryptfs/"

// rank orders the packages from the backing store (low) to the command
// (high), tier by tier as docs/architecture.md, "The picture", draws them
// (rule 1). A package may import only packages of a strictly lower rank:
// cmd -> cli -> mount/vault -> FUSE frontends/fsck/transport -> FUSE
// helpers -> upgrade -> session -> engine -> fresh -> fault -> tree -> keyslot -> core/config
// -> crypto/backing/uring/display. A package missing from this table
// fails the test, so that every new package gets a place.
var rank = map[string]int{
	"internal/backing":                    10,
	"internal/uring":                      10, // io_uring syscalls, like backing's
	"internal/crypto":                     10, // and everything below it
	"internal/display":                    10, // how vault strings are shown: standard library only
	"internal/config":                     20,
	"internal/fileengine":                 20,
	"internal/keyslot":                    25, // key slot credentials and age (above config, below fault)
	"internal/tree":                       30,
	"internal/fault":                      40,
	"internal/fresh":                      45, // freshness: manifests, epochs, local state (above fault, below session)
	"internal/engine":                     48, // the per-vault engine the session owns: Dir, File, the open-file table
	"internal/session":                    50,
	"internal/upgrade":                    52, // the content upgrade: of the engine's tier, over the session
	"internal/fuseserver":                 55,
	"internal/dircursor":                  55,
	"internal/forwardfs":                  60,
	"internal/reversefs":                  60,
	"internal/transport":                  60, // a FUSE transport: speaks errnos to the kernel
	"internal/fsck":                       60,
	"internal/mount":                      70,
	"internal/serve":                      75, // the WebDAV door: over the vault package
	"vault":                               70,
	"internal/cli":                        80,
	"cmd/encryptfs":                       90,
	"internal/fstest":                     -1, // test support: imported by tests only
	"internal/crashsim":                   -1, // test support: crash-state replay
	"internal/layers":                     -1,
	"internal/crypto/internal/vectortest": -1, // test vectors loader
}

// fuseLayer is the rank of the FUSE frontends: below it, no package turns
// an error into an errno (docs/architecture.md, rule 4).
const fuseLayer = 60

// doors are the packages above the engine, each with the packages of
// ours it may import (rule 2, "the doors reach a vault only through the
// session"): the session, the classification of errors, the display rule
// and the FUSE helpers; the CLI also the doors, the content upgrade and
// the key slot credentials the session's API takes; forwardfs, reversefs,
// vault and fsck also the engine the session owns (internal/engine). Whatever else a door imports is
// either a known violation below or a new one, which fails.
var doors = map[string][]string{
	"cmd/encryptfs":      {"internal/cli"},
	"internal/cli":       {"internal/mount", "internal/serve", "vault", "internal/fsck", "internal/session", "internal/upgrade", "internal/keyslot", "internal/fault", "internal/display"},
	"internal/mount":     {"internal/forwardfs", "internal/reversefs", "internal/fuseserver", "internal/transport", "internal/session"},
	"internal/forwardfs": {"internal/session", "internal/engine", "internal/fault", "internal/fuseserver", "internal/dircursor"},
	"internal/reversefs": {"internal/session", "internal/engine", "internal/fault", "internal/fuseserver", "internal/dircursor"},
	"vault":              {"internal/session", "internal/engine", "internal/fault", "internal/display"},
	"internal/serve":     {"vault", "internal/fault"},
	"internal/fsck":      {"internal/session", "internal/engine", "internal/fault", "internal/display"},
}

// knownViolations are the imports of today's code that break rule 2,
// listed in docs/architecture.md ("Known violations"): the doors that
// still reach past the session into the engine's parts. The list may only
// shrink: an entry the code no longer needs fails the test too, so that
// it is taken off here and in the doc. Empty since fsck went through
// engine.Inspector (issue 19): a new entry needs a reason written here.
var knownViolations = map[string][]string{}

// leaves import no package of ours (rule 5): the backing store, the
// io_uring binding, the display rule and the FUSE helpers shared by the
// two frontends.
var leaves = []string{"internal/backing", "internal/uring", "internal/display", "internal/fuseserver", "internal/dircursor"}

type pkg struct {
	dir     string   // module-relative directory
	imports []string // module-relative for our packages, full path otherwise
	files   map[string]*ast.File
	fset    *token.FileSet
}

// repoRoot is two levels up from this package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}

// loadPackages parses the non-test Go files of every package in the module.
func loadPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	root := repoRoot(t)
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		p := pkgs[rel]
		if p == nil {
			p = &pkg{dir: rel, files: map[string]*ast.File{}, fset: fset}
			pkgs[rel] = p
		}
		p.files[path] = f
		for _, imp := range f.Imports {
			p.imports = append(p.imports, strings.TrimPrefix(strings.Trim(imp.Path.Value, `"`), module))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages under %s", len(pkgs), root)
	}
	return pkgs
}

// rankOf returns the rank of a module-relative package directory: that of
// the longest table entry it is or lies below.
func rankOf(dir string) (int, bool) {
	best, r, ok := -1, 0, false
	for k, v := range rank {
		if (dir == k || strings.HasPrefix(dir, k+"/")) && len(k) > best {
			best, r, ok = len(k), v, true
		}
	}
	return r, ok
}

func ours(imp string) bool {
	return !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") && strings.Contains(imp, "/") && (strings.HasPrefix(imp, "internal/") || strings.HasPrefix(imp, "vault") || strings.HasPrefix(imp, "cmd/"))
}

// TestLayers (rule 1) fails when an import points up (or sideways) in the
// layering.
func TestLayers(t *testing.T) {
	pkgs := loadPackages(t)
	for _, p := range sorted(pkgs) {
		r, ok := rankOf(p.dir)
		if !ok {
			t.Errorf("%s: package has no place in the layer table (internal/layers)", p.dir)
			continue
		}
		for _, imp := range p.imports {
			if !ours(imp) {
				continue
			}
			ir, ok := rankOf(imp)
			switch {
			case !ok:
				t.Errorf("%s imports %s, which has no place in the layer table", p.dir, imp)
			case ir < 0 && r >= 0:
				t.Errorf("%s imports the test-support package %s", p.dir, imp)
			case r >= 0 && ir >= r && !sameCrypto(p.dir, imp):
				t.Errorf("%s (rank %d) imports %s (rank %d): imports must point down", p.dir, r, imp, ir)
			}
		}
	}
}

// sameCrypto allows the crypto packages to use each other (siv under names,
// content under reverse...): they form one layer with no I/O.
func sameCrypto(a, b string) bool {
	return strings.HasPrefix(a, "internal/crypto/") && strings.HasPrefix(b, "internal/crypto/")
}

// TestCryptoImports (rule 3): crypto packages use only the standard library,
// golang.org/x/crypto and each other, and no I/O (os, syscall, log).
func TestCryptoImports(t *testing.T) {
	for _, p := range sorted(loadPackages(t)) {
		if r, _ := rankOf(p.dir); !strings.HasPrefix(p.dir, "internal/crypto/") || r < 0 {
			continue
		}
		for _, imp := range p.imports {
			std := !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") && !ours(imp)
			switch {
			case strings.HasPrefix(imp, "internal/crypto/"), strings.HasPrefix(imp, "golang.org/x/crypto/"):
			case std && (imp == "os" || imp == "syscall" || imp == "log" || strings.HasPrefix(imp, "os/") || strings.HasPrefix(imp, "log/")):
				t.Errorf("%s imports %s: crypto does no I/O", p.dir, imp)
			case std:
			default:
				t.Errorf("%s imports %s: crypto may use only the standard library and golang.org/x/crypto", p.dir, imp)
			}
		}
	}
}

// TestDoorsThroughSession (rule 2): a door imports, of ours, only what
// doors allows it or what knownViolations lists; and every listed
// violation is still there (the list only shrinks).
func TestDoorsThroughSession(t *testing.T) {
	pkgs := loadPackages(t)
	for door, may := range doors {
		p := pkgs[door]
		if p == nil {
			t.Errorf("%s not found", door)
			continue
		}
		known := map[string]bool{}
		for _, imp := range knownViolations[door] {
			known[imp] = true
		}
		used := map[string]bool{}
		for _, imp := range p.imports {
			if !ours(imp) || used[imp] {
				continue
			}
			used[imp] = true
			if !slices.Contains(may, imp) && !known[imp] {
				t.Errorf("%s imports %s: a door reaches the vault only through internal/session and internal/engine (docs/architecture.md, rule 2; the doors table lists what each door may import)", door, imp)
			}
		}
		for imp := range known {
			if !used[imp] {
				t.Errorf("%s no longer imports %s: take it off knownViolations and docs/architecture.md's \"Known violations\"", door, imp)
			}
		}
	}
	for door := range knownViolations {
		if _, ok := doors[door]; !ok {
			t.Errorf("knownViolations names %s, which is not a door", door)
		}
	}
}

// TestLeaves (rule 5): the leaves import no package of ours.
func TestLeaves(t *testing.T) {
	pkgs := loadPackages(t)
	for _, leaf := range leaves {
		p := pkgs[leaf]
		if p == nil {
			t.Errorf("%s not found", leaf)
			continue
		}
		for _, imp := range p.imports {
			if ours(imp) {
				t.Errorf("%s imports %s: it is a leaf (docs/architecture.md, rule 5)", leaf, imp)
			}
		}
	}
}

// errnoName matches an errno constant: unix.ENOENT, syscall.EIO...
var errnoName = regexp.MustCompile(`^E[A-Z0-9]+$`)

// TestNoErrnoBelowFUSE (rule 4): below the FUSE frontends an errno may be compared
// (errors.Is, ==, case) but never produced: such layers return sentinel
// errors or pass the kernel's own error through.
func TestNoErrnoBelowFUSE(t *testing.T) {
	for _, p := range sorted(loadPackages(t)) {
		r, ok := rankOf(p.dir)
		// internal/fault holds the one table of kinds and errnos: it
		// classifies the kernel's errnos coming up from the backing store
		// and gives the doors (forwardfs, vault) the errno of each kind.
		// It returns none of them as an error itself.
		if !ok || r < 0 || r >= fuseLayer || p.dir == "internal/fault" {
			continue
		}
		for name, f := range p.files {
			for _, use := range producedErrnos(f) {
				t.Errorf("%s:%d: %s creates an errno below the FUSE layer; return a sentinel error",
					filepath.Join(p.dir, filepath.Base(name)), p.fset.Position(use.pos).Line, use.name)
			}
		}
	}
}

type errnoUse struct {
	name string
	pos  token.Pos
}

// producedErrnos lists the errno constants in f that are not just compared.
func producedErrnos(f *ast.File) []errnoUse {
	compared := map[ast.Node]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Is" && len(n.Args) == 2 {
				compared[n.Args[1]] = true
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				compared[n.X], compared[n.Y] = true, true
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				compared[e] = true
			}
		}
		return true
	})
	var out []errnoUse
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || compared[sel] {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || (id.Name != "unix" && id.Name != "syscall") || !errnoName.MatchString(sel.Sel.Name) {
			return true
		}
		out = append(out, errnoUse{name: id.Name + "." + sel.Sel.Name, pos: sel.Pos()})
		return true
	})
	return out
}

// sorted returns the packages in directory order, for stable messages.
func sorted(pkgs map[string]*pkg) []*pkg {
	out := make([]*pkg, 0, len(pkgs))
	for _, p := range pkgs {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dir < out[j].dir })
	return out
}
