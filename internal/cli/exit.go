package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/encryptfs/encryptfs/internal/fault"
)

// Exit codes. They are part of the interface (docs/cli.md): scripts test
// them, so a code's meaning never changes.
const (
	ExitOK            = 0  // success
	ExitError         = 1  // any other error (I/O, unexpected)
	ExitUsage         = 2  // bad command line
	ExitWrongPassword = 3  // wrong password or master key
	ExitCipherDir     = 4  // CIPHERDIR missing, not a directory, not empty (init), no config
	ExitCorruptConfig = 5  // config corrupt or edited
	ExitUnsupported   = 6  // vault newer than this build, unknown feature flag, reverse vault, KDF memory beyond this machine
	ExitPassword      = 7  // no password could be read (empty, mismatch, passfile/extpass failed)
	ExitMountPoint    = 8  // MOUNTPOINT missing, not a directory or not empty
	ExitMount         = 9  // the FUSE mount failed (serve: the listener failed)
	ExitUnmount       = 10 // unmount failed (not mounted, busy)
	ExitCorruptData   = 11 // file data or a name failed authentication (offline tools)
	ExitNoSpace       = 12 // the file system written to is full (ENOSPC) or over quota (EDQUOT)
	ExitKeySlot       = 13 // a key slot change refused: the last slot, no slot with that ID (or not of the kind asked), too many slots
	// ExitUnrecorded: unmounted, but the mount could not write its last
	// freshness records (a full CIPHERDIR); the next mount writes them.
	ExitUnrecorded = 29
)

// codedError carries an explicit exit code.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// withCode marks err with an exit code (nil stays nil).
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: code, err: err}
}

func errorfCode(code int, format string, args ...any) error {
	return withCode(code, fmt.Errorf(format, args...))
}

func usageErrorf(format string, args ...any) error {
	return errorfCode(ExitUsage, format, args...)
}

// errQuiet marks an error already reported (for example by the flag
// package), so Run prints nothing more.
var errQuiet = errors.New("already reported")

// ExitCode maps an error to its documented exit code: an explicit code
// first (withCode), then the error's fault.Kind, the one classification the
// mount's errnos and the vault's errors come from too.
func ExitCode(err error) int {
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	switch fault.Of(err) {
	case fault.WrongPassword:
		return ExitWrongPassword
	case fault.NoConfig:
		return ExitCipherDir
	case fault.UnsupportedVault:
		return ExitUnsupported
	case fault.CorruptConfig:
		return ExitCorruptConfig
	case fault.Corrupt:
		return ExitCorruptData
	case fault.NoSpace:
		return ExitNoSpace
	case fault.KeySlot:
		return ExitKeySlot
	case fault.RolledBack:
		return ExitFreshRolledBack
	}
	return ExitError
}

// userMessage is the one line printed for err: the sentinels get a plain
// sentence, everything else its own message on one line.
func userMessage(err error) string {
	if fault.Of(err) == fault.WrongPassword {
		return wrongPasswordMessage
	}
	return withoutInternalPrefixes(strings.Join(strings.Fields(err.Error()), " "))
}
