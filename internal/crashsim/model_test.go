package crashsim_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crashsim"
	"golang.org/x/sys/unix"
)

// TestModelBarriers records a few changes made through an observed FS on
// a plain directory and checks which of them the crash model lets a crash
// lose, and what the states look like.
func TestModelBarriers(t *testing.T) {
	dir := t.TempDir()
	rec, err := crashsim.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	fsys := backing.NewFS(rec)
	root, err := backing.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close(root)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// 0 create a, 1 write, 2 fsync a: the data is durable, the name not.
	must(fsys.WriteFileAt(root, "a", []byte("hello"), 0o600))
	if got := rec.Pending(3); !slices.Equal(got, []int{0}) {
		t.Fatalf("after WriteFileAt: pending %v, want [0] (the name)", got)
	}
	// 3 fsync root: everything durable.
	must(fsys.Fsync(root))
	if got := rec.Pending(4); len(got) != 0 {
		t.Fatalf("after fsync of the directory: pending %v", got)
	}
	// 4 mkdir d, 5 rename a -> d/b, 6 write into b (not synced).
	must(fsys.Mkdirat(root, "d", 0o700))
	d, err := backing.OpenSubdir(root, "d")
	must(err)
	defer backing.Close(d)
	must(fsys.Renameat2(root, "a", d, "b", 0))
	fd, err := fsys.Openat(d, "b", unix.O_RDWR, 0)
	must(err)
	f := fsys.NewFile(fd, nil)
	defer f.Close()
	_, err = f.WriteAt([]byte("J"), 0)
	must(err)
	if got := rec.Pending(7); !slices.Equal(got, []int{4, 5, 6}) {
		t.Fatalf("pending %v, want [4 5 6]", got)
	}
	// Losing the mkdir loses the rename that needs it: a stays, with the
	// write (it went to the inode, whatever its name).
	s, err := rec.StateAt(7, func(i int) bool { return i != 4 })
	must(err)
	if got := names(t, s); !slices.Equal(got, []string{"a=Jello"}) {
		t.Fatalf("mkdir lost: %v", got)
	}
	// Keeping all of it: the write shows.
	s, err = rec.StateAt(7, func(int) bool { return true })
	must(err)
	if got := names(t, s); !slices.Equal(got, []string{"d/", "d/b=Jello"}) {
		t.Fatalf("nothing lost: %v", got)
	}
	// 7 fsync d: the rename is durable, and with it the mkdir it needed;
	// the write is not (only an fsync of b makes it durable).
	must(fsys.FsyncDirAt(d, ""))
	if got := rec.Pending(8); !slices.Equal(got, []int{6}) {
		t.Fatalf("after fsync of d: pending %v, want [6]", got)
	}
	s, err = rec.StateAt(8, func(int) bool { return false })
	must(err)
	if got := names(t, s); !slices.Equal(got, []string{"d/", "d/b=hello"}) {
		t.Fatalf("write lost: %v", got)
	}
	// The model matches the disk.
	disk, err := crashsim.Snapshot(dir)
	must(err)
	if diff := crashsim.Diff(rec.Live(), disk); diff != "" {
		t.Fatal(diff)
	}
	must(rec.Err())
	// An unobserved change is a gap the recorder reports.
	must(os.WriteFile(filepath.Join(dir, "d", "c"), nil, 0o600))
	cfd, err := backing.Openat(d, "c", unix.O_RDWR)
	must(err)
	defer backing.Close(cfd)
	_, err = fsys.NewFile(cfd, nil).WriteAt([]byte("x"), 0)
	must(err)
	if rec.Err() == nil {
		t.Fatal("a write to a file the recorder never saw created went unnoticed")
	}
}

// names lists a materialized state as "path=content" and "dir/".
func names(t *testing.T, s *crashsim.State) []string {
	t.Helper()
	dir := t.TempDir()
	if err := s.Materialize(dir); err != nil {
		t.Fatal(err)
	}
	var out []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if e.IsDir() {
			out = append(out, rel+"/")
			return nil
		}
		b, err := os.ReadFile(p)
		out = append(out, rel+"="+string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
