package forwardfs_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestTruncateHuge (issue 18): `truncate -s 1P` through the mount returns
// at once and costs the daemon (in this process) a bounded amount of
// memory, on a vault with file roots and on a v1 one; the file then has
// that size, reads zeros near the end, and takes a byte at the end that
// reads back after a remount. With CIPHERDIR on ext4 (no tmpfs here) the
// size is 8 TiB, below ext4's 16 TiB. Before the sparse tag table the
// truncate killed the daemon (runtime: out of memory).
func TestTruncateHuge(t *testing.T) {
	size := int64(1 << 50) // the largest file at the tests' 4 KiB chunks
	dir := func(t *testing.T) string {
		if d := mounttest.SparseDir(t); d != "" {
			return d
		}
		size = 8 << 40
		return t.TempDir()
	}
	for _, tc := range []struct {
		name  string
		mount func(t *testing.T) *mounttest.Vault
	}{
		{"roots", func(t *testing.T) *mounttest.Vault { return mounttest.NewRootsVaultIn(t, dir(t), nil) }},
		{"default", func(t *testing.T) *mounttest.Vault { return mounttest.NewVaultIn(t, dir(t), nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.mount(t)
			p := filepath.Join(v.Mnt, "f")
			must(t, os.WriteFile(p, []byte("head"), 0o644))

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			t0 := time.Now()
			must(t, unix.Truncate(p, size))
			took := time.Since(t0)
			runtime.ReadMemStats(&after)
			grew := after.TotalAlloc - before.TotalAlloc
			t.Logf("truncate to %d: %v, %d bytes allocated", size, took, grew)
			if took > 5*time.Second {
				t.Errorf("truncate to %d took %v", size, took)
			}
			if grew > 64<<20 {
				t.Errorf("truncate to %d allocated %d bytes in the daemon", size, grew)
			}

			f, err := os.OpenFile(p, os.O_RDWR, 0)
			must(t, err)
			st, err := f.Stat()
			must(t, err)
			if st.Size() != size {
				t.Fatalf("size %d, want %d", st.Size(), size)
			}
			buf := make([]byte, 8192)
			_, err = f.ReadAt(buf, size-int64(len(buf))-4096)
			must(t, err)
			if !bytes.Equal(buf, make([]byte, len(buf))) {
				t.Fatal("the hole near the end does not read as zeros")
			}
			_, err = f.WriteAt([]byte{0x5a}, size-1)
			must(t, err)
			must(t, f.Close())

			v.Remount(t) // the byte from CIPHERDIR, not the page cache
			got, err := os.OpenFile(p, os.O_RDONLY, 0)
			must(t, err)
			defer got.Close()
			last := make([]byte, 2)
			n, err := got.ReadAt(last, size-2)
			if n != 2 || !bytes.Equal(last, []byte{0, 0x5a}) {
				t.Fatalf("read back %x (%d bytes), %v", last[:n], n, err)
			}
			head := make([]byte, 4)
			_, err = got.ReadAt(head, 0)
			must(t, err)
			if string(head) != "head" {
				t.Fatalf("head %q", head)
			}
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("truncate, write, remount and read allocated %d bytes", grew)
			}
		})
	}
}

// TestStressNgFsize (issue 18): stress-ng's fsize stressor, which makes
// files of fixed, random and power-of-two sizes up to its RLIMIT_FSIZE,
// hung against a vault with file roots; it must finish, and pass.
func TestStressNgFsize(t *testing.T) {
	bin := fstest.RequireTool(t, "stress-ng")
	d := mounttest.SparseDir(t)
	if d == "" {
		d = t.TempDir()
	}
	v := mounttest.NewRootsVaultIn(t, d, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--fsize", "1", "--timeout", "10s", "--temp-path", v.Mnt, "--metrics-brief")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("stress-ng --fsize hangs against the mount:\n%s", out)
	}
	if err != nil {
		t.Fatalf("stress-ng --fsize: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
