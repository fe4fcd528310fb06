package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ReadFile returns the bytes of the config file dir/name (encryptfs.conf, or
// the reverse-mode config). The directory is where an attacker may write
// (docs/format.md §1), so the file is opened without following a symlink
// (O_NOFOLLOW: no detour to /dev/zero or another user's file), without
// blocking (O_NONBLOCK: a FIFO planted there must not hang the open), and
// must be a regular file; at most MaxFileSize bytes are read, so a huge
// file costs no memory. Anything else wraps ErrCorrupt with a one-line
// reason; a missing file wraps ErrNotFound.
func ReadFile(dir, name string) ([]byte, error) {
	path := filepath.Join(dir, name)
	// Lstat first, so that a device node is refused without opening it
	// (opening some devices has side effects); the fstat below closes the
	// race with a file swapped in between.
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := checkRegular(name, fi.Mode()); err != nil {
		return nil, err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, checkRegular(name, fs.ModeSymlink)
	}
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("config: open %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := checkRegular(name, fi.Mode()); err != nil {
		return nil, err
	}
	if fi.Size() > MaxFileSize {
		return nil, tooLarge(name, fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if len(data) > MaxFileSize { // grew after the fstat
		return nil, tooLarge(name, int64(len(data)))
	}
	return data, nil
}

// LoadFile reads (see ReadFile) and parses dir/name.
func LoadFile(dir, name string) (*Config, error) {
	data, err := ReadFile(dir, name)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Load reads and parses dir/encryptfs.conf.
func Load(dir string) (*Config, error) {
	return LoadFile(dir, FileName)
}

// checkRegular refuses anything but a regular file, naming what it found.
func checkRegular(name string, mode fs.FileMode) error {
	var kind string
	switch {
	case mode.IsRegular():
		return nil
	case mode&fs.ModeSymlink != 0:
		kind = "a symlink"
	case mode&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case mode&fs.ModeDevice != 0:
		kind = "a device"
	case mode.IsDir():
		kind = "a directory"
	default:
		kind = "a special file"
	}
	return fmt.Errorf("%w: %s is not a regular file (it is %s)", ErrCorrupt, name, kind)
}

func tooLarge(name string, size int64) error {
	return fmt.Errorf("%w: %s is %d bytes, too large for a config file (limit %d)", ErrCorrupt, name, size, MaxFileSize)
}
