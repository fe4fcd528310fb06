package tree

import (
	"errors"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// TestUnlinkType removes entries with and without a known file type and
// checks that nothing is left behind: neither the entry, nor a long name's
// sidecar, nor a long symlink target's sidecar.
func TestUnlinkType(t *testing.T) {
	tests := []struct {
		name   string
		plain  string
		target string // symlink target; "" for a regular file
		mode   uint32 // what the caller passes
	}{
		{"file, type known", "f", "", unix.S_IFREG},
		{"file, type unknown", "f", "", 0},
		{"long-named file, type known", strings.Repeat("n", 250), "", unix.S_IFREG},
		{"symlink, type known", "l", "short", unix.S_IFLNK},
		{"long-target symlink, type known", "l", strings.Repeat("t", 4000), unix.S_IFLNK},
		{"long-target symlink, type unknown", "l", strings.Repeat("t", 4000), 0},
		{"long-named long-target symlink", strings.Repeat("m", 250), strings.Repeat("t", 4000), unix.S_IFLNK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, _, root, id := newTestTree(t)
			n := mustName(t, tr, id, tc.plain)
			if tc.target == "" {
				fd, err := tr.Create(NewDir(root, nil, nil), n, 0, 0o644)
				must(t, err)
				backing.Close(fd)
			} else {
				must(t, tr.Symlink(NewDir(root, id, nil), n, tc.target))
			}
			if ents, _ := backing.ReadDir(root); len(ents) < 2 {
				t.Fatalf("nothing created: %+v", ents)
			}
			must(t, tr.Unlink(NewDir(root, nil, nil), n, tc.mode))
			// Only the root's dirid remains.
			if ents, _ := backing.ReadDir(root); len(ents) != 1 {
				t.Fatalf("leftovers: %+v", ents)
			}
			if err := tr.Unlink(NewDir(root, nil, nil), n, tc.mode); !errors.Is(err, unix.ENOENT) {
				t.Fatalf("second unlink: %v, want ENOENT", err)
			}
		})
	}
}
