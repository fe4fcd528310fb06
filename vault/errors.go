package vault

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/sys/unix"
)

// Errors. Lower-layer errors are wrapped, so errors.Is sees through them.
var (
	// ErrWrongPassword: the password (or master key) does not unlock the vault.
	ErrWrongPassword = session.ErrWrongPassword
	// ErrCorrupt: data in the vault failed authentication (a chunk, a header,
	// a name, a symlink target, an xattr or a directory ID).
	ErrCorrupt = fault.New(fault.Corrupt, "vault: data failed authentication")
	// ErrClosed: the vault or file was used after Close.
	ErrClosed = fault.New(fault.Closed, "vault: closed")
)

// pathErr wraps err for the caller: a *fs.PathError whose error satisfies
// the package's promise (errors.Is finds a syscall.Errno or an ErrXxx of
// this package), derived from the error's fault.Kind as the mount's errnos
// and the CLI's exit codes are: corruption gets ErrCorrupt, use after close
// ErrClosed, a POSIX kind (tree.ErrNotFound, names.ErrNameTooLong, ...) its
// errno. The lower-layer error stays in the chain.
func pathErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	err = classify(err)
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == p {
		return err
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}

// classify adds to err the sentinel or errno of its kind, unless err
// already holds it.
func classify(err error) error {
	var mark error
	switch k := fault.Of(err); k {
	case fault.Corrupt:
		mark = ErrCorrupt
	case fault.Closed:
		mark = ErrClosed
	default:
		var e unix.Errno
		if k.Errno() == 0 || errors.As(err, &e) {
			return err // WrongPassword is config's sentinel itself
		}
		mark = k.Errno()
	}
	if errors.Is(err, mark) {
		return err
	}
	return fmt.Errorf("%w: %w", mark, err)
}
