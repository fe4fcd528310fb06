package fsx

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// sideName names side 0 (the filesystem under test) and side 1 (the
// reference) in messages.
func sideName(s int) string {
	if s == 0 {
		return "test"
	}
	return "ref"
}

// pair is one logical file: the same name in the test and reference dirs,
// each with an open read-write descriptor.
type pair struct {
	dirs [2]string
	name string
	fds  [2]int
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// createPair creates (O_EXCL) name in both dirs, sized to size.
func createPair(testDir, refDir, name string, size int64) (*pair, error) {
	p := &pair{dirs: [2]string{testDir, refDir}, name: name, fds: [2]int{-1, -1}}
	for s := range 2 {
		fd, err := unix.Open(p.path(s), unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("create %s file: %w", sideName(s), err)
		}
		p.fds[s] = fd
		if size > 0 {
			if err := unix.Ftruncate(fd, size); err != nil {
				p.close()
				return nil, fmt.Errorf("size %s file: %w", sideName(s), err)
			}
		}
	}
	return p, nil
}

// openPair opens existing files of the same name in both dirs.
func openPair(testDir, refDir, name string) (*pair, error) {
	p := &pair{dirs: [2]string{testDir, refDir}, name: name, fds: [2]int{-1, -1}}
	return p, p.reopen()
}

func (p *pair) path(s int) string { return filepath.Join(p.dirs[s], p.name) }

// reopen closes and reopens both descriptors.
func (p *pair) reopen() error {
	if err := p.close(); err != nil {
		return err
	}
	for s := range 2 {
		fd, err := unix.Open(p.path(s), unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("reopen %s file: %w", sideName(s), err)
		}
		p.fds[s] = fd
	}
	return nil
}

// close closes whatever is open; the first error wins.
func (p *pair) close() error {
	var first error
	for s := range 2 {
		if p.fds[s] >= 0 {
			if err := unix.Close(p.fds[s]); err != nil && first == nil {
				first = fmt.Errorf("close %s file: %w", sideName(s), err)
			}
			p.fds[s] = -1
		}
	}
	return first
}

// remove unlinks both files under their current name, so that the same
// seed can run again in the same directories.
func (p *pair) remove(t interface{ Errorf(string, ...any) }) {
	for s := range 2 {
		if err := os.Remove(p.path(s)); err != nil && !os.IsNotExist(err) {
			t.Errorf("remove %s file: %v", sideName(s), err)
		}
	}
}

// size returns the fstat size of both sides and fails if they differ.
func (p *pair) size() (int64, error) {
	var st [2]unix.Stat_t
	for s := range 2 {
		if err := unix.Fstat(p.fds[s], &st[s]); err != nil {
			return 0, fmt.Errorf("fstat %s file: %w", sideName(s), err)
		}
	}
	if st[0].Size != st[1].Size {
		return 0, fmt.Errorf("size differs: test %d, ref %d", st[0].Size, st[1].Size)
	}
	return st[0].Size, nil
}

// preadFull reads len(b) bytes at off, short only at EOF.
func preadFull(fd int, b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pread(fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// pwriteFull writes all of b at off.
func pwriteFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		m, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b, off = b[m:], off+int64(m)
	}
	return nil
}

// compareRange reads [off, off+n) from both sides and reports the first
// difference.
func (p *pair) compareRange(off, n int64) error {
	const step = 1 << 20
	a, b := make([]byte, min(n, step)), make([]byte, min(n, step))
	for n > 0 {
		k := min(n, step)
		na, erra := preadFull(p.fds[0], a[:k], off)
		nb, errb := preadFull(p.fds[1], b[:k], off)
		if erra != nil {
			return fmt.Errorf("read test file at %d+%d: %w", off, k, erra)
		}
		if errb != nil {
			return fmt.Errorf("read ref file at %d+%d: %w", off, k, errb)
		}
		if err := diff(a[:na], b[:nb], off); err != nil {
			return fmt.Errorf("%w; %s", err, p.uncached(off, b[:nb]))
		}
		off, n = off+k, n-k
	}
	return nil
}

// uncached reads the test side's [off, off+len(want)) again through a new
// O_DIRECT descriptor, past the kernel's page cache, and says whether that
// read agrees with the reference bytes want: it tells a file system that
// stored wrong bytes from a page cache that kept stale ones.
func (p *pair) uncached(off int64, want []byte) string {
	fd, err := unix.Open(p.path(0), unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Sprintf("an O_DIRECT open for a second read failed: %v", err)
	}
	defer unix.Close(fd)
	got := make([]byte, len(want))
	n, err := preadFull(fd, got, off)
	if err != nil {
		return fmt.Sprintf("an O_DIRECT read again failed: %v", err)
	}
	if err := diff(got[:n], want, off); err != nil {
		return fmt.Sprintf("an O_DIRECT read again (past the page cache) differs too: %v", err)
	}
	return "an O_DIRECT read again (past the page cache) gives the reference bytes: the page cache held stale bytes"
}

// diff describes the first difference between test bytes a and ref bytes b
// that both start at file offset base.
func diff(a, b []byte, base int64) error {
	if bytes.Equal(a, b) {
		return nil
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return fmt.Errorf("short read at %d: test returned %d bytes, ref %d", base, len(a), len(b))
	}
	j := i
	for j < len(a) && j < len(b) && a[j] != b[j] {
		j++
	}
	return fmt.Errorf("contents differ at offset %d (for %d bytes): test [% x], ref [% x] (first 16 bytes)",
		base+int64(i), j-i, a[i:min(i+16, len(a))], b[i:min(i+16, len(b))])
}

// compareFiles opens both paths afresh and compares size and all bytes.
func compareFiles(testPath, refPath string) error {
	a, err := os.ReadFile(testPath)
	if err != nil {
		return fmt.Errorf("final read of test file: %w", err)
	}
	b, err := os.ReadFile(refPath)
	if err != nil {
		return fmt.Errorf("final read of ref file: %w", err)
	}
	if len(a) != len(b) {
		return fmt.Errorf("final size differs: test %d, ref %d", len(a), len(b))
	}
	if err := diff(a, b, 0); err != nil {
		return fmt.Errorf("after reopening: %w", err)
	}
	return nil
}
