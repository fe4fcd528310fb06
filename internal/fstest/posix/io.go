package posix

import (
	"bytes"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// testIO: O_APPEND, sparse writes past EOF, positional I/O, and the times a
// write changes.
func testIO(t *testing.T, e *env) {
	f := e.p("f")
	mkfile(t, f, 0o644, []byte("start"))

	// O_APPEND: every write lands at the end, whatever the offset.
	fd, err := unix.Open(f, unix.O_WRONLY|unix.O_APPEND, 0)
	ok(t, err, "open O_APPEND")
	for _, chunk := range []string{"-one", "-two", "-three"} {
		_, err := unix.Seek(fd, 0, 0)
		ok(t, err, "seek")
		_, err = unix.Write(fd, []byte(chunk))
		ok(t, err, "append")
	}
	unix.Close(fd)
	if got := readFile(t, f); string(got) != "start-one-two-three" {
		t.Errorf("O_APPEND: file reads %q", got)
	}

	// Two O_APPEND descriptors interleave without overwriting each other.
	fd1, err := unix.Open(f, unix.O_WRONLY|unix.O_APPEND, 0)
	ok(t, err, "open 1")
	fd2, err := unix.Open(f, unix.O_WRONLY|unix.O_APPEND, 0)
	ok(t, err, "open 2")
	for i := 0; i < 3; i++ {
		_, err = unix.Write(fd1, []byte("A"))
		ok(t, err, "write 1")
		_, err = unix.Write(fd2, []byte("B"))
		ok(t, err, "write 2")
	}
	unix.Close(fd1)
	unix.Close(fd2)
	if got := readFile(t, f); string(got) != "start-one-two-threeABABAB" {
		t.Errorf("two O_APPEND fds: file reads %q", got)
	}

	// Writing changes mtime and ctime, not the directory's.
	checkTimes(t, "write", func() {
		fd, err := unix.Open(f, unix.O_WRONLY, 0)
		ok(t, err, "open")
		_, err = unix.Pwrite(fd, []byte("S"), 0)
		ok(t, err, "pwrite")
		unix.Close(fd)
	}, tw{f, true, true}, tw{e.dir, false, false})

	// Sparse writes past EOF at chunk-like boundaries: the gap reads as zeros.
	s := e.p("sparse")
	mkfile(t, s, 0o644, []byte("head"))
	fd, err = unix.Open(s, unix.O_RDWR, 0)
	ok(t, err, "open sparse")
	defer unix.Close(fd)
	want := []byte("head")
	for _, off := range []int64{4096, 65535, 65536 * 3, 1 << 20, 1<<20 + 4095, 5<<20 + 17} {
		data := []byte("block@" + strconv.FormatInt(off, 10))
		_, err := unix.Pwrite(fd, data, off)
		ok(t, err, "pwrite past EOF")
		if int64(len(want)) < off {
			want = append(want, make([]byte, off-int64(len(want)))...)
		}
		want = append(want[:off], data...)
		var st unix.Stat_t
		ok(t, unix.Fstat(fd, &st), "fstat")
		if st.Size != int64(len(want)) {
			t.Errorf("pwrite at %d: size %d, want %d", off, st.Size, len(want))
		}
	}
	got := make([]byte, len(want)+100)
	n, err := unix.Pread(fd, got, 0)
	ok(t, err, "pread")
	if !bytes.Equal(got[:n], want) {
		t.Errorf("sparse file: contents differ (read %d bytes, want %d)", n, len(want))
	}
	// Reads at and past EOF return 0 bytes.
	n, err = unix.Pread(fd, got, int64(len(want)))
	if err != nil || n != 0 {
		t.Errorf("pread at EOF: %d, %v", n, err)
	}
	n, err = unix.Pread(fd, got, int64(len(want))+1<<20)
	if err != nil || n != 0 {
		t.Errorf("pread past EOF: %d, %v", n, err)
	}
	// The file offset of a plain fd follows reads and writes.
	fd3, err := unix.Open(f, unix.O_RDWR, 0)
	ok(t, err, "open")
	defer unix.Close(fd3)
	_, err = unix.Write(fd3, []byte("XY"))
	ok(t, err, "write")
	buf := make([]byte, 3)
	_, err = unix.Read(fd3, buf)
	ok(t, err, "read")
	if string(buf) != "art" {
		t.Errorf("read after write at offset 2: %q, want \"art\"", buf)
	}
}
