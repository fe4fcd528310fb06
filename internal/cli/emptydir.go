package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// prepareEmptyDir creates dir (0700) if it is missing and refuses a
// directory that has anything in it (exit 4). cmd and what ("CIPHERDIR",
// "DESTDIR") name it in messages; created says whether it made dir, which
// is then the caller's to remove if it fails.
func prepareEmptyDir(cmd, what, dir string) (created bool, err error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return false, withCode(ExitCipherDir, fmt.Errorf("%s: cannot create %s %s: %w", cmd, what, dir, errors.Unwrap(err)))
		}
		return true, nil
	}
	if err != nil {
		return false, withCode(ExitCipherDir, fmt.Errorf("%s: %s %s: %w", cmd, what, dir, errors.Unwrap(err)))
	}
	if !fi.IsDir() {
		return false, errorfCode(ExitCipherDir, "%s: %s %s is not a directory; give an empty or new directory", cmd, what, dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return false, withCode(ExitCipherDir, fmt.Errorf("%s: %s %s: %w", cmd, what, dir, errors.Unwrap(err)))
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, withCode(ExitCipherDir, fmt.Errorf("%s: %s %s: %w", cmd, what, dir, err))
	}
	if len(names) > 0 {
		return false, errorfCode(ExitCipherDir, "%s: %s %s is not empty; give an empty or new directory (%s creates it)", cmd, what, dir, cmd)
	}
	return false, nil
}
