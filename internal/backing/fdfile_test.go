package backing

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFile checks File against the io.ReaderAt/WriterAt contracts the
// engine relies on, and that the stat given to NewFile answers only the
// first Stat.
func TestFile(t *testing.T) {
	_, root := setup(t)
	fd, err := openat(root, "g", unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
	must(t, err)
	st, err := Fstat(fd)
	must(t, err)
	f := NewFile(fd, &st)
	defer f.Close()
	if int(f.Fd()) != fd {
		t.Fatalf("Fd = %d, want %d", f.Fd(), fd)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != 0 || fi.IsDir() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("first Stat = %v, %v", fi, err)
	}
	data := bytes.Repeat([]byte("0123456789"), 1000)
	if n, err := f.WriteAt(data, 5); n != len(data) || err != nil {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	// The first Stat was the cached one; now the real size shows.
	if fi, err := f.Stat(); err != nil || fi.Size() != int64(len(data)+5) {
		t.Fatalf("second Stat = %v, %v", fi, err)
	}
	tests := []struct {
		name string
		off  int64
		size int
		want int
		eof  bool
	}{
		{"inside", 5, 100, 100, false},
		{"up to the end", 5, len(data), len(data), false},
		{"past the end", 1000, len(data), len(data) + 5 - 1000, true},
		{"at the end", int64(len(data) + 5), 10, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := make([]byte, tc.size)
			n, err := f.ReadAt(p, tc.off)
			if n != tc.want || errors.Is(err, io.EOF) != tc.eof || (err != nil && !tc.eof) {
				t.Fatalf("ReadAt = %d, %v; want %d, eof %v", n, err, tc.want, tc.eof)
			}
			if n > 0 && !bytes.Equal(p[:n], data[tc.off-5:tc.off-5+int64(n)]) {
				t.Fatalf("ReadAt returned the wrong bytes")
			}
		})
	}
	must(t, f.Truncate(3))
	must(t, f.Sync())
	if fi, err := f.Stat(); err != nil || fi.Size() != 3 {
		t.Fatalf("Stat after Truncate = %v, %v", fi, err)
	}
	if _, err := NewFile(-1, nil).ReadAt(make([]byte, 1), 0); !errors.Is(err, unix.EBADF) {
		t.Fatalf("ReadAt on a bad fd: %v", err)
	}
}
