package backing

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// The f*xattr calls fail with EBADF on O_PATH descriptors (see OpenDir's
// fallback); then the same call goes through /proc/self/fd/N, which names
// exactly the open inode (no path lookup in the backing store).
func procPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// Fgetxattr returns the value of backing xattr name of fd.
func Fgetxattr(fd int, name string) ([]byte, error) {
	size := 256
	for {
		buf := make([]byte, size)
		n, err := retryN(func() (int, error) { return unix.Fgetxattr(fd, name, buf) })
		if err == unix.EBADF {
			n, err = retryN(func() (int, error) { return unix.Getxattr(procPath(fd), name, buf) })
		}
		if err == unix.ERANGE && size < 1<<17 {
			size *= 16
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

// fsetxattr sets backing xattr name of fd; flags is 0, unix.XATTR_CREATE or
// unix.XATTR_REPLACE.
func fsetxattr(fd int, name string, value []byte, flags int) error {
	err := retry(func() error { return unix.Fsetxattr(fd, name, value, flags) })
	if err == unix.EBADF {
		err = retry(func() error { return unix.Setxattr(procPath(fd), name, value, flags) })
	}
	return err
}

// fremovexattr removes backing xattr name of fd.
func fremovexattr(fd int, name string) error {
	err := retry(func() error { return unix.Fremovexattr(fd, name) })
	if err == unix.EBADF {
		err = retry(func() error { return unix.Removexattr(procPath(fd), name) })
	}
	return err
}

// Flistxattr returns the names of all xattrs of fd.
func Flistxattr(fd int) ([]string, error) {
	size := 1024
	for {
		buf := make([]byte, size)
		n, err := retryN(func() (int, error) { return unix.Flistxattr(fd, buf) })
		if err == unix.EBADF {
			n, err = retryN(func() (int, error) { return unix.Listxattr(procPath(fd), buf) })
		}
		if err == unix.ERANGE && size < 1<<17 {
			size *= 16
			continue
		}
		if err != nil {
			return nil, err
		}
		var out []string
		start := 0
		for i := 0; i < n; i++ {
			if buf[i] == 0 {
				if i > start {
					out = append(out, string(buf[start:i]))
				}
				start = i + 1
			}
		}
		return out, nil
	}
}
