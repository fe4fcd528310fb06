package tree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
)

// TestRenameOverHardLink (issue 18, L4): a rename that replaces one name
// of a file with other names drops the replaced file's binding to that
// name, as an unlink does. Then the storage putting the replaced file's
// backing (as it is now, bound to its remaining names) back under the
// name reads as misplaced, not as the old contents; its other names still
// read. With two names the bindings are in the header's slots, with three
// or more in the links file.
func TestRenameOverHardLink(t *testing.T) {
	for _, names := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("%d names", names), func(t *testing.T) {
			b := newBoundTree(t)
			a := mustName(t, b.Tree, b.id, "a")
			b.create(t, b.root, b.id, a, []byte("contents of a"))
			var others []Name
			for i := 1; i < names; i++ {
				n := mustName(t, b.Tree, b.id, fmt.Sprintf("link%d", i))
				must(t, b.Link(NewDir(b.root, b.id, nil), a, NewDir(b.root, b.id, nil), n))
				others = append(others, n)
			}
			target := others[0]
			c := mustName(t, b.Tree, b.id, "c")
			b.create(t, b.root, b.id, c, []byte("contents of c"))

			must(t, b.Rename(NewDir(b.root, b.id, nil), c, NewDir(b.root, b.id, nil), target, 0))
			if got, err := b.read(b.root, b.id, target); err != nil || string(got) != "contents of c" {
				t.Fatalf("the renamed file: %q, %v", got, err)
			}
			if got, err := b.read(b.root, b.id, a); err != nil || string(got) != "contents of a" {
				t.Fatalf("the replaced file's first name: %q, %v", got, err)
			}

			// The storage puts the replaced file back under the name.
			tp := filepath.Join(b.dir, target.Backing)
			must(t, os.Remove(tp))
			must(t, os.Link(filepath.Join(b.dir, a.Backing), tp))
			got, err := b.read(b.root, b.id, target)
			if !errors.Is(err, bind.ErrMisplaced) {
				t.Fatalf("the replaced file put back under the name it lost: %q, %v; want bind.ErrMisplaced", got, err)
			}
			for _, n := range append([]Name{a}, others[1:]...) {
				if got, err := b.read(b.root, b.id, n); err != nil || string(got) != "contents of a" {
					t.Fatalf("%s after the rename: %q, %v", n.Plain, got, err)
				}
			}
		})
	}
}
