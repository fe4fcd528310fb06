package backing

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ReplaceOpts change what ReplaceFile does around its rename.
type ReplaceOpts uint8

const (
	// ReplaceSyncDir fsyncs the directory of the new name after the
	// rename, so that the replace is durable when ReplaceFile returns.
	// Without it the caller fsyncs (once for several replaces, or after
	// a step that must come first).
	ReplaceSyncDir ReplaceOpts = 1 << iota
	// ReplaceKeepLeftover leaves whatever stands at the temporary name:
	// the exclusive create then fails with EEXIST. For a temporary name
	// whose leftover is the user's to look at (the config's: an earlier
	// write interrupted, which may hold the only copy of a change).
	ReplaceKeepLeftover
)

// ReplaceFile is the one atomic replace of a small file beneath a
// directory fd: name in todirfd becomes a new file holding data, mode
// mode, or stays as it was. Whatever stands at tmp in dirfd (a leftover,
// or a symlink or FIFO planted there) is removed first, unless
// ReplaceKeepLeftover; tmp is created exclusively (O_EXCL, O_NOFOLLOW:
// nothing followed, nothing opened but the new file), written, fsynced
// and closed (WriteFileAt), then renamed over name (rename replaces a
// symlink at name, never follows it), and with ReplaceSyncDir todirfd is
// fsynced. A failed rename removes tmp. Each step goes through f, so an
// Observer (crash replay) sees them; a nil f observes nothing.
func (f *FS) ReplaceFile(dirfd int, tmp string, todirfd int, name string, data []byte, mode uint32, o ReplaceOpts) error {
	if o&ReplaceKeepLeftover == 0 {
		if err := f.Unlinkat(dirfd, tmp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	if err := f.WriteFileAt(dirfd, tmp, data, mode); err != nil {
		return err
	}
	if err := f.Renameat2(dirfd, tmp, todirfd, name, 0); err != nil {
		f.Unlinkat(dirfd, tmp, 0)
		return err
	}
	if o&ReplaceSyncDir != 0 {
		return f.Fsync(todirfd)
	}
	return nil
}
