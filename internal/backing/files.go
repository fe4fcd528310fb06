package backing

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"
)

// Dirent is one entry of a backing directory as getdents64 reports it.
type Dirent struct {
	Name string
	Ino  uint64
	Type uint8 // unix.DT_REG, unix.DT_DIR, ... or unix.DT_UNKNOWN
}

// ReadDir lists every entry of the open directory fd except "." and "..",
// in the order the kernel returns them. It reads with getdents64 from the
// start of the directory (it seeks fd to 0 first), so one fd can be listed
// again.
func ReadDir(fd int) ([]Dirent, error) {
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return nil, err
	}
	var out []Dirent
	buf := make([]byte, 32<<10)
	for {
		n, err := retryN(func() (int, error) { return unix.Getdents(fd, buf) })
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		out, err = parseDirents(buf[:n], out)
		if err != nil {
			return nil, err
		}
	}
}

// parseDirents decodes linux_dirent64 records: ino u64, off s64, reclen
// u16, type u8, NUL-terminated name.
func parseDirents(b []byte, out []Dirent) ([]Dirent, error) {
	const fixed = 19
	for len(b) > 0 {
		if len(b) < fixed {
			return nil, fmt.Errorf("backing: short dirent record")
		}
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < fixed || reclen > len(b) {
			return nil, fmt.Errorf("backing: bad dirent length %d", reclen)
		}
		rec := b[:reclen]
		b = b[reclen:]
		nameb := rec[fixed:]
		for i, c := range nameb {
			if c == 0 {
				nameb = nameb[:i]
				break
			}
		}
		name := string(nameb)
		if name == "." || name == ".." {
			continue
		}
		out = append(out, Dirent{
			Name: name,
			Ino:  binary.NativeEndian.Uint64(rec[0:8]),
			Type: rec[18],
		})
	}
	return out, nil
}

// writeFileAt creates file name in dirfd exclusively (O_EXCL), writes data,
// fsyncs it and closes it. mode is applied with fchmod after writing, so a
// read-only mode such as 0400 does not need the file to be writable first.
func writeFileAt(dirfd int, name string, data []byte, mode uint32) error {
	fd, err := openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0600)
	if err != nil {
		return err
	}
	if err := writeAll(fd, data); err != nil {
		Close(fd)
		unix.Unlinkat(dirfd, name, 0)
		return err
	}
	if mode != 0600 {
		if err := retry(func() error { return unix.Fchmod(fd, mode) }); err != nil {
			Close(fd)
			unix.Unlinkat(dirfd, name, 0)
			return err
		}
	}
	if err := fsync(fd); err != nil {
		Close(fd)
		unix.Unlinkat(dirfd, name, 0)
		return err
	}
	return Close(fd)
}

// writeAll writes data to fd from the current offset, looping on short writes.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := retryN(func() (int, error) { return unix.Write(fd, data) })
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// ErrTooBig is returned by ReadFileAt for a file larger than its limit.
var ErrTooBig = fmt.Errorf("backing: file larger than expected")

// ErrNotRegular is returned by ReadFileAt and OpenRegular when the entry is
// not a regular file (a FIFO, socket or device planted in CIPHERDIR in place
// of a metadata file or of a file's contents). Callers treat it as
// corruption of the entry, like a malformed file.
var ErrNotRegular = errors.New("backing: not a regular file")

// OpenRegular opens entry name of dirfd (flags as for Openat) and checks on
// the fd that it is a regular file; it returns the fd and its stat.
//
// The open adds O_NONBLOCK, so that a FIFO planted in the entry's place
// cannot block the caller forever (open(2) of a FIFO for reading waits for a
// writer) and a device node is never waited on; O_NOFOLLOW comes from
// Openat. Once the fd is known to be a regular file, O_NONBLOCK is cleared
// again: it has no effect on regular files of local file systems, but a
// FUSE or network backing store may see it, and the fd is used for normal
// blocking I/O afterwards. A non-regular entry gives ErrNotRegular (wrapped
// with the entry's name) and no fd.
func OpenRegular(dirfd int, name string, flags int) (int, unix.Stat_t, error) {
	fd, err := openat(dirfd, name, flags|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, unix.Stat_t{}, err
	}
	st, err := Fstat(fd)
	if err != nil {
		Close(fd)
		return -1, st, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		Close(fd)
		return -1, st, fmt.Errorf("%w: %q (mode %#o)", ErrNotRegular, name, st.Mode&unix.S_IFMT)
	}
	if flags&unix.O_NONBLOCK == 0 {
		// F_SETFL replaces exactly the flags it can change; keep those
		// the caller asked for.
		keep := flags & (unix.O_APPEND | unix.O_ASYNC | unix.O_DIRECT | unix.O_NOATIME)
		if _, err := retryN(func() (int, error) {
			return unix.FcntlInt(uintptr(fd), unix.F_SETFL, keep)
		}); err != nil {
			Close(fd)
			return -1, st, err
		}
	}
	return fd, st, nil
}

// ReadFileAt reads all of file name in dirfd, refusing symlinks, entries
// that are not regular files (ErrNotRegular: see OpenRegular; a FIFO in
// the place of a metadata file must not hang the caller) and files longer
// than limit bytes (metadata files are small; a huge one is corrupt). The
// fd is only read once, so O_NONBLOCK stays on it.
//
// The buffer starts at the size fstat reports (at most limit+1 bytes) and
// grows only while the file keeps giving bytes, so a generous limit costs
// nothing for the small files that are the rule, and a size claimed by
// the backing store never sizes an allocation beyond limit.
func ReadFileAt(dirfd int, name string, limit int) ([]byte, error) {
	fd, st, err := OpenRegular(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer Close(fd)
	buf := make([]byte, min(max(st.Size, 0), int64(limit))+1)
	total := 0
	for {
		if total == len(buf) {
			if total > limit {
				return nil, fmt.Errorf("%w: %s", ErrTooBig, name)
			}
			buf = append(buf, make([]byte, min(len(buf), limit+1-len(buf)))...)
		}
		n, err := retryN(func() (int, error) { return unix.Read(fd, buf[total:]) })
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return buf[:total], nil
		}
		total += n
	}
}

// ReadDirAt lists directory rel of dirfd (as OpenDir finds it: beneath
// dirfd, no symlink followed) through a descriptor of its own, so that
// callers sharing dirfd never race on its offset.
func ReadDirAt(dirfd int, rel string) ([]Dirent, error) {
	fd, err := OpenDir(dirfd, rel)
	if err != nil {
		return nil, err
	}
	defer Close(fd)
	return ReadDir(fd)
}
