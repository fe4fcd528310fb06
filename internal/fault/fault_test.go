package fault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// TestOf covers what the module-wide table (vault/errors_table_test.go)
// does not: precedence among wrapped sentinels, kernel errnos, io/fs's
// generic errors and marked sentinels.
func TestOf(t *testing.T) {
	mark := New(Corrupt, "upper: damaged")
	tests := []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, Other},
		{"unknown", errors.New("boom"), Other},
		{"config wraps kdf", fmt.Errorf("%w: Params: %w", config.ErrCorrupt, kdf.ErrParams), CorruptConfig},
		{"corrupt before errno", fmt.Errorf("%w: %w", content.ErrCorruptChunk, unix.EIO), Corrupt},
		{"ENOSPC", fmt.Errorf("write: %w", unix.ENOSPC), NoSpace},
		{"EDQUOT", &os.PathError{Op: "write", Path: "f", Err: unix.EDQUOT}, NoSpace},
		{"ENOENT", unix.ENOENT, NotFound},
		{"EROFS", unix.EROFS, ReadOnly},
		{"EACCES is no POSIX kind here", unix.EACCES, Other},
		{"EIO", unix.EIO, Other},
		{"fs.ErrNotExist", fs.ErrNotExist, NotFound},
		{"fs.ErrClosed", fmt.Errorf("read: %w", fs.ErrClosed), Closed},
		{"tree sentinel", fmt.Errorf("rename: %w", tree.ErrNotEmpty), NotEmpty},
		{"marked", mark, Corrupt},
		{"marked, wrapped", fmt.Errorf("x: %w", mark), Corrupt},
		{"joined", errors.Join(errors.New("a"), config.ErrWrongPassword), WrongPassword},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.err); got != tc.want {
				t.Fatalf("Of(%v) = %v, want %v", tc.err, got, tc.want)
			}
			if tc.err != nil && !Is(tc.err, tc.want) {
				t.Fatalf("Is(%v, %v) = false", tc.err, tc.want)
			}
		})
	}
	if Is(nil, Other) {
		t.Fatal("Is(nil, Other) = true")
	}
}

// TestKinds: every kind has a distinct name, and the POSIX kinds' errnos
// classify back to them.
func TestKinds(t *testing.T) {
	names := map[string]Kind{}
	for _, k := range Kinds() {
		s := k.String()
		if s == "" || s == "unknown kind" {
			t.Errorf("kind %d has no name", int(k))
		}
		if prev, ok := names[s]; ok {
			t.Errorf("kinds %d and %d share the name %q", prev, k, s)
		}
		names[s] = k
		if e := k.Errno(); e != 0 && Of(e) != k {
			t.Errorf("Of(%v) = %v, want %v", e, Of(e), k)
		}
	}
	if Kind(len(Kinds())).String() != "unknown kind" {
		t.Error("Kinds misses a kind")
	}
	if NoSpace.Errno() != unix.ENOSPC || Corrupt.Errno() != 0 || Other.Errno() != 0 {
		t.Error("Errno of NoSpace, Corrupt or Other is wrong")
	}
}

// TestErrnoFastPaths: Errno's shortcuts (a bare errno, tree.ErrNotFound
// itself) answer what the full classification does, for every sentinel,
// bare and wrapped, and for errnos.
func TestErrnoFastPaths(t *testing.T) {
	errs := []error{unix.ENOENT, unix.EIO, unix.ENOSPC, fmt.Errorf("op: %w", unix.EEXIST)}
	for _, s := range sentinels {
		errs = append(errs, s.err, fmt.Errorf("wrapped: %w", s.err))
	}
	for _, err := range errs {
		if got, want := Errno(err), classifiedErrno(err); got != want {
			t.Errorf("Errno(%v) = %v, the full classification says %v", err, got, want)
		}
	}
	if Errno(tree.ErrNotFound) != unix.ENOENT {
		t.Error("tree.ErrNotFound is not ENOENT")
	}
}
