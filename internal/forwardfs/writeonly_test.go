package forwardfs_test

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"github.com/encryptfs/encryptfs/internal/mount"
	"golang.org/x/sys/unix"
)

// TestWriteOnlyWritersStayCoherent: what a write-only handle writes is
// seen by every other way to see the file: a reader following a log
// appended to through O_WRONLY|O_APPEND, a cached reader beside a writer,
// a reader after a write-only rewrite of cached pages, a reader that maps
// the file shared beside the writer, and a file mapped right after its
// writer closed, 200 times. Written for an attempt to let write-only
// handles bypass the page cache (FOPEN_DIRECT_IO), which was withdrawn
// (docs/performance.md, "Write-only handles through the page cache"); it
// guards any later attempt. The mappings live in a child process
// (mounttest.MapShared): touched from this process, which serves the
// mount, a page fault can deadlock with the Go runtime's stop-the-world,
// which is what hung this test before. The daemon must log nothing.
func TestWriteOnlyWritersStayCoherent(t *testing.T) {
	var logs mounttest.SyncWriter
	v := mounttest.NewVault(t, func(o *mount.Options) { o.Logger = log.New(&logs, "", 0) })
	readAll := func(fd int, n int) []byte {
		t.Helper()
		buf := make([]byte, n)
		k, err := unix.Pread(fd, buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		return buf[:k]
	}
	open := func(path string, flags int) int {
		t.Helper()
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	write := func(fd int, s string) {
		t.Helper()
		if _, err := unix.Write(fd, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("follow a log", func(t *testing.T) {
		// A logger appends through O_WRONLY|O_APPEND; a reader opened
		// meanwhile reads the page, then the logger appends into the same
		// page. A writer that bypassed the cache without invalidating it
		// would leave the reader the page from its first read (zeros past
		// the old end).
		path := filepath.Join(v.Mnt, "log")
		w := open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND)
		write(w, "one\n")
		r := open(path, unix.O_RDONLY)
		if got := readAll(r, 64); string(got) != "one\n" {
			t.Fatalf("first read %q", got)
		}
		write(w, "two\n")
		var got []byte
		eventually(func() bool { got = readAll(r, 64); return string(got) == "one\ntwo\n" })
		if string(got) != "one\ntwo\n" {
			t.Fatalf("the reader opened beside the writer read %q, want %q", got, "one\ntwo\n")
		}
		// A reader opened after the first reader, still beside the writer.
		write(w, "three\n")
		r2 := open(path, unix.O_RDONLY)
		if got := readAll(r2, 64); string(got) != "one\ntwo\nthree\n" {
			t.Fatalf("second reader read %q", got)
		}
	})

	t.Run("writer beside a cached reader", func(t *testing.T) {
		// The reader is open (and cached) first; the write-only handle
		// opened now must reach it.
		path := filepath.Join(v.Mnt, "shared")
		if err := os.WriteFile(path, []byte("aaaa"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := open(path, unix.O_RDONLY)
		if got := readAll(r, 64); string(got) != "aaaa" {
			t.Fatalf("first read %q", got)
		}
		w := open(path, unix.O_WRONLY)
		if _, err := unix.Pwrite(w, []byte("bb"), 1); err != nil {
			t.Fatal(err)
		}
		if got := readAll(r, 64); string(got) != "abba" {
			t.Fatalf("the cached reader read %q after a write beside it, want %q", got, "abba")
		}
	})

	t.Run("overwrite after a cached read", func(t *testing.T) {
		// Pages cached by a closed handle, then a write-only handle alone
		// rewrites them: the next reader must not be served the old pages.
		path := filepath.Join(v.Mnt, "rewritten")
		old := bytes.Repeat([]byte("o"), 3*4096)
		if err := os.WriteFile(path, old, 0o644); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second read is from the cache (FOPEN_KEEP_CACHE)
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, old) {
				t.Fatalf("read back: %v", err)
			}
		}
		w, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Pwrite(w, []byte("new"), 4096); err != nil {
			t.Fatal(err)
		}
		unix.Close(w)
		want := append([]byte{}, old...)
		copy(want[4096:], "new")
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("read after a write-only rewrite: %q at 4096, want %q", got[4096:4099], "new")
		}
	})

	t.Run("shared map beside a write-only writer", func(t *testing.T) {
		// A reader opened beside a write-only writer is cached and may map
		// the file shared; the writer's writes reach the mapping (our
		// invalidation, or the kernel's own on 6.18).
		path := filepath.Join(v.Mnt, "mapped")
		w := open(path, unix.O_WRONLY|unix.O_CREAT)
		write(w, string(bytes.Repeat([]byte("m"), 4096)))
		m, err := mounttest.MapShared(t, path, 4096)
		if err != nil {
			t.Fatalf("MAP_SHARED beside a write-only writer: %v", err)
		}
		if b := m.Byte(100); b != 'm' {
			t.Fatalf("mapped byte %q", b)
		}
		if _, err := unix.Pwrite(w, []byte("W"), 100); err != nil {
			t.Fatal(err)
		}
		var b byte
		eventually(func() bool { b = m.Byte(100); return b == 'W' })
		if b != 'W' {
			t.Fatalf("the mapping shows %q after the write, want 'W'", b)
		}
	})

	t.Run("write, close, map at once", func(t *testing.T) {
		// RELEASE comes after close(2) returns: nothing about a writer
		// that just closed may change how the next open behaves.
		path := filepath.Join(v.Mnt, "at-once")
		for i := range 200 {
			if err := os.WriteFile(path, bytes.Repeat([]byte{byte(i)}, 8192), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := mounttest.MapShared(t, path, 8192)
			if err != nil {
				t.Fatalf("round %d: MAP_SHARED right after the writer closed: %v", i, err)
			}
			ok := m.Byte(0) == byte(i) && m.Byte(8191) == byte(i)
			m.Close()
			if !ok {
				t.Fatalf("round %d: mapped stale bytes", i)
			}
		}
	})

	if logs.String() != "" {
		t.Errorf("the daemon logged: %s", logs.String())
	}
}

// eventually polls ok for up to 2 s (a cache invalidated asynchronously
// would be seen after a moment; the page cache path needs no wait).
func eventually(ok func() bool) {
	for deadline := time.Now().Add(2 * time.Second); !ok() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}
