package fsck

import (
	"context"
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// Repair fixes in place what a crash (or an interrupted operation) leaves
// behind and what can be fixed without guessing (docs/format.md, "Crash
// consistency"):
//   - temporary entries (a config written by an interrupted passwd, the
//     temporary name of a symlink or sidecar being replaced) are removed;
//   - long-name and long-target sidecars without the entry they belong to
//     are removed;
//   - a directory whose encryptfs.dirid is missing or torn, and which holds
//     nothing else, gets a new random ID (there is no name in it that the
//     lost ID could decrypt);
//   - a regular file whose header fails its MAC, while every chunk of the
//     file authenticates under the file ID the header holds, gets its header
//     rebuilt (SPARSE set only if the file has all-zero chunks that need it).
//
// Everything else (names that do not decrypt, bad chunks, conflict copies)
// is left as it is: fixing it would mean deleting or guessing data.
//
// Repair first checks the vault as Check does, then for each fix calls
// before (which may refuse it by returning an error: nothing is changed
// then and Repair stops) and makes the change, then checks the vault again.
// The caller makes sure the vault is not mounted. The returned RepairReport
// lists the fixes made and the report of the check after them.
func Repair(ctx context.Context, s *session.Session, before func(Fix) error) (*RepairReport, error) {
	w, err := check(ctx, s, Options{}, true)
	if err != nil {
		return nil, err
	}
	out := &RepairReport{}
	rootfd, err := backing.OpenRoot(s.Dir())
	if err != nil {
		return nil, err
	}
	defer backing.Close(rootfd)
	tr := s.Tree()
	for _, f := range w.fixes {
		if before != nil {
			if err := before(f); err != nil {
				return out, err
			}
		}
		if err := f.apply(s.Backing(), rootfd, tr, s.Engine()); err != nil {
			out.Failed = append(out.Failed, fmt.Sprintf("%s: %v", ProblemLine(f.problem()), err))
			continue
		}
		out.Fixes = append(out.Fixes, f)
	}
	out.After, err = Check(ctx, s, Options{})
	return out, err
}

// RepairReport is the result of Repair.
type RepairReport struct {
	Fixes  []Fix    // the changes made, in order
	Failed []string // fixes that could not be made, and why
	After  *Report  // the check after the changes
}

// fixAction is what a Fix does.
type fixAction uint8

const (
	// fixRemove unlinks a file or symlink.
	fixRemove fixAction = iota + 1
	// fixRemoveDir removes a temporary directory holding at most a dirid.
	fixRemoveDir
	// fixDirID writes a new directory ID into an otherwise empty directory.
	fixDirID
	// fixHeader rewrites a file's header (Header holds the new bytes).
	fixHeader
)

// Fix is one change Repair makes.
type Fix struct {
	Kind       Kind   // the kind of problem it repairs
	CipherPath string // the backing path it changes
	PlainPath  string `json:",omitempty"`
	Action     string // what is done, for a human

	dir    string // backing directory, relative to CIPHERDIR ("." is the root)
	name   string // the entry in dir (for fixDirID, the directory itself)
	action fixAction
	header []byte
	ino    uint64       // the inode the fix was planned for
	place  bind.Place   // fixRebindDir, fixRebindFile: where the object is
	also   []bind.Place // fixRebindFile: the places of the file's other names
}

// Line renders the fix on one line, as the CLI prints it before making it:
// "repair: KIND CIPHERPATH (plain PATH): ACTION".
func (f Fix) Line() string { return "repair: " + ProblemLine(f.problem()) }

func (f Fix) problem() Problem {
	return Problem{Kind: f.Kind, CipherPath: f.CipherPath, PlainPath: f.PlainPath, Detail: f.Action}
}

// errChanged: the entry a fix was planned for changed before it was made
// (something else is writing to the vault).
var errChanged = errors.New("fsck: entry changed since it was checked")

// apply makes the change through fsys (the session's, so that crash replay
// and freshness see it). Every step goes through directory fds below
// rootfd and checks that the entry is still the inode that was checked.
func (f Fix) apply(fsys *backing.FS, rootfd int, t *tree.Tree, eng *fileengine.Engine) error {
	newID := func() ([]byte, error) { return t.DirIDs().New() }
	dirfd, err := backing.OpenDir(rootfd, f.dir)
	if err != nil {
		return err
	}
	defer backing.Close(dirfd)
	st, err := backing.Fstatat(dirfd, f.name)
	if err != nil {
		return err
	}
	if st.Ino != f.ino {
		return errChanged
	}
	switch f.action {
	case fixRemove:
		err = fsys.Unlinkat(dirfd, f.name, 0)
	case fixRemoveDir:
		err = removeTempDir(fsys, dirfd, f.name)
	case fixDirID:
		err = writeNewDirID(fsys, dirfd, f.name, newID)
	case fixHeader:
		err = rewriteHeader(fsys, dirfd, f.name, f.header)
	case fixRebindDir:
		err = rebindDir(t, dirfd, f.name, f.place)
	case fixRebindFile:
		err = rebindFile(fsys, eng, dirfd, f.name, f.place, f.also)
	case fixRecomputeRoot:
		err = recomputeRoot(fsys, eng, dirfd, f.name, f.place)
	}
	if err != nil {
		return err
	}
	// The change is durable before the next one is made.
	return fsys.Fsync(dirfd)
}

// removeTempDir removes temporary directory name of dirfd, which must hold
// nothing but (possibly) a dirid.
func removeTempDir(fsys *backing.FS, dirfd int, name string) error {
	sub, err := backing.OpenSubdir(dirfd, name)
	if err != nil {
		return err
	}
	defer backing.Close(sub)
	ents, err := backing.ReadDir(sub)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name != names.DirIDFile {
			return fmt.Errorf("%w: %s is not empty", errChanged, name)
		}
		if err := fsys.Unlinkat(sub, e.Name, 0); err != nil {
			return err
		}
	}
	return fsys.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// writeNewDirID gives directory name of dirfd (name "" for dirfd itself,
// the root) a new ID, after checking again that it holds no entry the old ID could
// have named.
func writeNewDirID(fsys *backing.FS, dirfd int, name string, newID func() ([]byte, error)) error {
	sub, err := backing.OpenDir(dirfd, name)
	if err != nil {
		return err
	}
	defer backing.Close(sub)
	ents, err := backing.ReadDir(sub)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !dirIDRebuildable(e.Name, name == "") {
			return fmt.Errorf("%w: %s holds %s", errChanged, name, e.Name)
		}
	}
	if err := fsys.Unlinkat(sub, names.DirIDFile, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	id, err := newID()
	if err != nil {
		return err
	}
	if err := fsys.WriteFileAt(sub, names.DirIDFile, id, 0o400); err != nil {
		return err
	}
	return fsys.Fsync(sub)
}

// rewriteHeader writes the 36 header bytes hdr over the start of file name
// and fsyncs it.
func rewriteHeader(fsys *backing.FS, dirfd int, name string, hdr []byte) error {
	fd, _, err := backing.OpenRegular(dirfd, name, unix.O_WRONLY)
	if err != nil {
		return err
	}
	f := fsys.NewFile(fd, nil)
	defer f.Close()
	if _, err := f.WriteAt(hdr, 0); err != nil {
		return err
	}
	return f.Sync()
}
