package cli

import (
	"errors"
	"fmt"
	"os"
)

// checkDir requires path to be an existing directory; what names it in
// messages ("CIPHERDIR", "MOUNTPOINT") and code is the exit code on failure.
func checkDir(path string, code int, what string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return errorfCode(code, "%s %s does not exist", what, path)
	}
	if err != nil {
		return withCode(code, fmt.Errorf("%s: %w", what, err))
	}
	if !fi.IsDir() {
		return errorfCode(code, "%s %s is not a directory", what, path)
	}
	return nil
}
