package tree

import (
	"errors"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// TestLinkFails checks that a hard link the backing store refuses is
// reported as a failure and leaves no long-name sidecar behind, and that an
// existing entry of the new name keeps its own sidecar.
func TestLinkFails(t *testing.T) {
	long := strings.Repeat("k", 230)
	tests := []struct {
		name    string
		dir     bool   // link a directory (the kernel refuses: EPERM)
		taken   string // plaintext name of an existing entry to link onto; "" for none
		newName string
		want    error
	}{
		{"directory, short name", true, "", "dl", unix.EPERM},
		{"directory, long name", true, "", long, unix.EPERM},
		{"onto existing short name", false, "x", "x", unix.EEXIST},
		{"onto existing long name", false, long, long, unix.EEXIST},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, _, root, id := newTestTree(t)
			src := mustName(t, tr, id, "src")
			if tc.dir {
				_, err := tr.Mkdir(NewDir(root, nil, nil), src, 0o700)
				must(t, err)
			} else {
				fd, err := tr.Create(NewDir(root, nil, nil), src, 0, 0o600)
				must(t, err)
				backing.Close(fd)
			}
			if tc.taken != "" {
				fd, err := tr.Create(NewDir(root, nil, nil), mustName(t, tr, id, tc.taken), 0, 0o600)
				must(t, err)
				backing.Close(fd)
			}
			nn := mustName(t, tr, id, tc.newName)
			if err := tr.Link(NewDir(root, nil, nil), src, NewDir(root, nil, nil), nn); !errors.Is(err, tc.want) {
				t.Fatalf("Link = %v, want %v", err, tc.want)
			}
			_, err := backing.Fstatat(root, names.SidecarName(nn.Backing))
			switch {
			case !nn.Long:
			case tc.taken != "" && err != nil:
				t.Fatalf("the existing entry lost its long-name sidecar: %v", err)
			case tc.taken == "" && !errors.Is(err, unix.ENOENT):
				t.Fatalf("failed link left its long-name sidecar: %v", err)
			}
			want := map[string]bool{"src": true}
			if tc.taken != "" {
				want[tc.taken] = true
			}
			if got := listPlain(t, tr, root, id); len(got) != len(want) {
				t.Fatalf("listing %v, want %v", got, want)
			}
		})
	}
}

// TestRenameExchangeMissing: RENAME_EXCHANGE needs both names.
func TestRenameExchangeMissing(t *testing.T) {
	tr, _, root, id := newTestTree(t)
	a := mustName(t, tr, id, "a")
	fd, err := tr.Create(NewDir(root, nil, nil), a, 0, 0o600)
	must(t, err)
	backing.Close(fd)
	err = tr.Rename(NewDir(root, id, nil), a, NewDir(root, id, nil), mustName(t, tr, id, "missing"), unix.RENAME_EXCHANGE)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("exchange with a missing name: %v", err)
	}
}
