package tree

import (
	"errors"
	"fmt"
	"io/fs"
)

// Errors for the POSIX rules tree enforces itself, where the backing store
// cannot see the plaintext view's rule (an alias that names nothing, rmdir
// of a directory that holds only its ID, rename across file types, hard
// links of symlinks). They wrap io/fs's generic errors where one fits, so
// errors.Is(err, fs.ErrNotExist) works; only the FUSE layer turns them into
// errnos.
var (
	// ErrNotFound: no entry has this plaintext name.
	ErrNotFound = fmt.Errorf("tree: no such entry: %w", fs.ErrNotExist)
	// ErrExists: the target name is taken (RENAME_NOREPLACE, symlink).
	ErrExists = fmt.Errorf("tree: entry exists: %w", fs.ErrExist)
	// ErrNotEmpty: a directory to remove or replace has entries.
	ErrNotEmpty = errors.New("tree: directory not empty")
	// ErrIsDir: a non-directory cannot replace a directory.
	ErrIsDir = errors.New("tree: is a directory")
	// ErrNotDir: a directory cannot replace a non-directory.
	ErrNotDir = errors.New("tree: not a directory")
	// ErrNotPermitted: the operation is refused by a rule of the format
	// (for example a hard link of a symlink, whose target is bound to one
	// name).
	ErrNotPermitted = fmt.Errorf("tree: operation not permitted: %w", fs.ErrPermission)
	// ErrInvalid: the operation does not apply to this entry.
	ErrInvalid = fmt.Errorf("tree: invalid argument: %w", fs.ErrInvalid)
	// ErrReadOnly: the entry is an alias (a sync tool's conflict copy or an
	// undecryptable entry) that may be read, renamed to a name of its own
	// (adopted) or removed, but not modified in place.
	ErrReadOnly = errors.New("tree: entry is read-only (conflict copy or undecryptable)")
	// ErrXattrListFull: one more xattr would make the object's backing
	// xattr list longer than listxattr(2) can return (XattrListMax), so no
	// tool could list the object's xattrs any more; refused as a full
	// file system refuses it.
	ErrXattrListFull = errors.New("tree: no room for another xattr: the xattr list would exceed 64 KiB")
	// ErrNoXattrs: the backing store does not store extended attributes
	// (see ProbeXattrs).
	ErrNoXattrs = errors.New("tree: the backing store does not support extended attributes")
)
