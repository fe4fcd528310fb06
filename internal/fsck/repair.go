package fsck

import (
	"context"
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/session"
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
	root, err := s.Vault().Inspect().OpenRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, f := range w.fixes {
		if before != nil {
			if err := before(f); err != nil {
				return out, err
			}
		}
		if err := f.apply(root); err != nil {
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
	ino    uint64         // the inode the fix was planned for
	place  engine.Place   // fixRebindDir, fixRebindFile: where the object is
	also   []engine.Place // fixRebindFile: the places of the file's other names
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

// apply makes the change through the inspector's directories (the
// session's backing FS, so that crash replay and freshness see it). Every
// step goes through directories below root and checks that the entry is
// still the inode that was checked.
func (f Fix) apply(root *engine.InspectDir) error {
	dir, err := root.Open(f.dir)
	if err != nil {
		return err
	}
	defer dir.Close()
	st, err := dir.StatAt(f.name)
	if err != nil {
		return err
	}
	if st.Ino != f.ino {
		return errChanged
	}
	switch f.action {
	case fixRemove:
		err = dir.Unlink(f.name, 0)
	case fixRemoveDir:
		err = removeTempDir(dir, f.name)
	case fixDirID:
		err = writeNewDirID(dir, f.name)
	case fixHeader:
		err = dir.RewriteHeader(f.name, f.header)
	case fixRebindDir:
		err = dir.RebindDir(f.name, f.place)
	case fixRebindFile:
		err = dir.RebindFile(f.name, f.place, f.also)
	case fixRecomputeRoot:
		err = dir.Reroot(f.name, f.place)
	}
	if err != nil {
		return err
	}
	// The change is durable before the next one is made.
	return dir.Sync()
}

// removeTempDir removes temporary directory name of dir, which must hold
// nothing but (possibly) a dirid.
func removeTempDir(dir *engine.InspectDir, name string) error {
	sub, err := dir.Sub(name)
	if err != nil {
		return err
	}
	defer sub.Close()
	ents, err := sub.List()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name != engine.DirIDFile {
			return fmt.Errorf("%w: %s is not empty", errChanged, name)
		}
		if err := sub.Unlink(e.Name, 0); err != nil {
			return err
		}
	}
	return dir.Unlink(name, unix.AT_REMOVEDIR)
}

// writeNewDirID gives directory name of dir (name "" for dir itself, the
// root) a new ID, after checking again that it holds no entry the old ID
// could have named.
func writeNewDirID(dir *engine.InspectDir, name string) error {
	sub, err := dir.Open(name)
	if err != nil {
		return err
	}
	defer sub.Close()
	ents, err := sub.List()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !dirIDRebuildable(e.Name, name == "") {
			return fmt.Errorf("%w: %s holds %s", errChanged, name, e.Name)
		}
	}
	return sub.NewDirID()
}
