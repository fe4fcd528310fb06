package fileengine

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"golang.org/x/sys/unix"
)

// pageBacking is a sparse in-memory Backing: 4 KiB pages, a page never
// written is a hole (SeekData skips it, PunchHole makes one), as a file
// system with hole tracking. It holds a file of 2^50 bytes in a few pages.
type pageBacking struct {
	mu    sync.Mutex
	pages map[int64]*[pageSize]byte
	size  int64
}

const pageSize = 4096

func newPageBacking() *pageBacking { return &pageBacking{pages: map[int64]*[pageSize]byte{}} }

func (p *pageBacking) ReadAt(b []byte, off int64) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(b) && off+int64(n) < p.size {
		at := off + int64(n)
		k := min(int64(len(b)-n), pageSize-at%pageSize, p.size-at)
		if pg := p.pages[at/pageSize]; pg != nil {
			copy(b[n:n+int(k)], pg[at%pageSize:])
		} else {
			clear(b[n : n+int(k)])
		}
		n += int(k)
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (p *pageBacking) WriteAt(b []byte, off int64) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n := 0; n < len(b); {
		at := off + int64(n)
		pg := p.pages[at/pageSize]
		if pg == nil {
			pg = new([pageSize]byte)
			p.pages[at/pageSize] = pg
		}
		n += copy(pg[at%pageSize:], b[n:])
	}
	p.size = max(p.size, off+int64(len(b)))
	return len(b), nil
}

func (p *pageBacking) Truncate(size int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, pg := range p.pages {
		switch {
		case k*pageSize >= size:
			delete(p.pages, k)
		case (k+1)*pageSize > size:
			clear(pg[size-k*pageSize:])
		}
	}
	p.size = size
	return nil
}

func (p *pageBacking) PunchHole(off, length int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := off + length
	for k, pg := range p.pages {
		from, to := max(off, k*pageSize), min(end, (k+1)*pageSize)
		if from >= to {
			continue
		}
		if from == k*pageSize && to == (k+1)*pageSize {
			delete(p.pages, k)
		} else {
			clear(pg[from-k*pageSize : to-k*pageSize])
		}
	}
	return nil
}

func (p *pageBacking) SeekData(off int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := int64(-1)
	for k := range p.pages {
		if (k+1)*pageSize > off && k*pageSize < p.size && (best < 0 || k < best) {
			best = k
		}
	}
	if best < 0 || off >= p.size {
		return 0, io.EOF
	}
	return max(off, best*pageSize), nil
}

func (p *pageBacking) SeekHole(off int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if off >= p.size {
		return 0, fs.ErrInvalid
	}
	k := off / pageSize
	for p.pages[k] != nil {
		k++
	}
	return min(max(off, k*pageSize), p.size), nil
}

func (p *pageBacking) Stat() (os.FileInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return memInfo{size: p.size}, nil
}

func (p *pageBacking) Sync() error { return nil }

// hugeBackings are the backings a file of 2^50 bytes fits in: pageBacking
// and, where /dev/shm is tmpfs, a real sparse file (ext4 stops at 16 TiB).
func hugeBackings(t *testing.T) map[string]func() Backing {
	bs := map[string]func() Backing{"pages": func() Backing { return newPageBacking() }}
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC {
		bs["tmpfs"] = func() Backing {
			dir, err := os.MkdirTemp("/dev/shm", "huge")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			fd, err := unix.Open(dir+"/f", unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			f := backing.NewFile(fd, nil)
			t.Cleanup(func() { f.Close() })
			return f
		}
	}
	return bs
}

// allocated returns the bytes the Go heap allocated while run ran.
func allocated(run func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	run()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRootsHugeSparse (issue 18): with file roots, a truncate to 1 TiB
// and to 1 PiB, a byte written near the end, fsync, close, reopen and
// reads cost memory independent of the size (the tag table holds the
// blocks with data only) and little time. Before the sparse table the
// 1 TiB step alone allocated 1 GiB.
func TestRootsHugeSparse(t *testing.T) {
	const memBound = 16 << 20
	e := newRootsEngine(t, content.AES256GCM, content.DefaultChunkSize, Options{Parallel: ParallelOptions{Enabled: true}})
	for name, mk := range hugeBackings(t) {
		for _, size := range []int64{1 << 40, 1 << 50} {
			b := mk()
			var elapsed time.Duration
			used := allocated(func() {
				t0 := time.Now()
				f, err := e.OpenAt(b, testPlace)
				if err != nil {
					t.Fatal(err)
				}
				mustWrite(t, f, []byte("head"), 0)
				if err := f.Truncate(size); err != nil {
					t.Fatalf("%s: Truncate(%d): %v", name, size, err)
				}
				mustWrite(t, f, []byte{0x5a}, size-1)
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				mustClose(t, f)
				f, err = e.OpenAt(b, testPlace)
				if err != nil {
					t.Fatalf("%s: reopen: %v", name, err)
				}
				if got, _ := f.Size(); got != size {
					t.Fatalf("%s: size %d, want %d", name, got, size)
				}
				buf := make([]byte, 64<<10)
				if _, err := f.ReadAt(buf, size-int64(len(buf))-1); err != nil {
					t.Fatalf("%s: read before the end: %v", name, err)
				}
				if !bytes.Equal(buf, make([]byte, len(buf))) {
					t.Fatalf("%s: the hole before the end does not read as zeros", name)
				}
				last := make([]byte, 1)
				if _, err := f.ReadAt(last, size-1); err != nil || last[0] != 0x5a {
					t.Fatalf("%s: last byte %x, %v", name, last, err)
				}
				if err := f.VerifyRoot(); err != nil {
					t.Fatalf("%s: VerifyRoot: %v", name, err)
				}
				mustClose(t, f)
				elapsed = time.Since(t0)
			})
			t.Logf("%s, %d bytes: %d bytes allocated, %v", name, size, used, elapsed)
			if used > memBound {
				t.Fatalf("%s: a file of %d bytes allocated %d bytes (bound %d)", name, size, used, memBound)
			}
			if elapsed > 10*time.Second {
				t.Fatalf("%s: a file of %d bytes took %v", name, size, elapsed)
			}
		}
	}
}

// TestRootsHugeRepairAndPunch: a DIRTY file of 1 PiB (a crash before the
// clean header) is re-rooted by RepairRoot reading its data groups only,
// and a punch of the whole file is one backing punch: both bounded.
func TestRootsHugeRepairAndPunch(t *testing.T) {
	const size = 1 << 50
	e := newRootsEngine(t, content.AES256GCM, content.DefaultChunkSize, Options{})
	b := newPageBacking()
	f, err := e.OpenAt(b, testPlace)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, bytes.Repeat([]byte{1}, 100<<10), 0)
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte{2}, size/2)
	// No close: the header stays DIRTY, as after a crash.
	used := allocated(func() {
		g, err := e.OpenUnrooted(b, testPlace)
		if err != nil {
			t.Fatal(err)
		}
		if !g.RootDirty() {
			t.Fatal("file not DIRTY")
		}
		if err := g.RepairRoot(); err != nil {
			t.Fatalf("RepairRoot: %v", err)
		}
		mustClose(t, g)
		g, err = e.OpenAt(b, testPlace)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.VerifyRoot(); err != nil {
			t.Fatalf("VerifyRoot after repair: %v", err)
		}
		if err := g.PunchHole(0, size); err != nil {
			t.Fatalf("PunchHole: %v", err)
		}
		mustClose(t, g)
		g, err = e.OpenAt(b, testPlace)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		if _, err := g.ReadAt(buf, size/2); err != nil || buf[0] != 0 {
			t.Fatalf("after the punch: %x, %v", buf, err)
		}
		mustClose(t, g)
	})
	if used > 16<<20 {
		t.Errorf("repair, verify and punch of a 1 PiB file allocated %d bytes", used)
	}
}

// TestRootsMaxSize: a file with roots grows to the documented maximum
// (content.MaxRootsChunks chunks: 4 PiB at 16 KiB) and not beyond
// (ErrTooLarge, EFBIG through the mount); the root at the maximum costs
// well under a second.
func TestRootsMaxSize(t *testing.T) {
	e := newRootsEngine(t, content.AES256GCM, content.DefaultChunkSize, Options{})
	maxSize := int64(content.MaxRootsChunks) * content.DefaultChunkSize
	b := newPageBacking()
	f, err := e.OpenAt(b, testPlace)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxSize + 1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Truncate(max+1) = %v, want ErrTooLarge", err)
	}
	if _, err := f.WriteAt([]byte{1}, maxSize); !errors.Is(err, ErrTooLarge) {
		t.Errorf("write at max = %v, want ErrTooLarge", err)
	}
	t0 := time.Now()
	if err := f.Truncate(maxSize); err != nil {
		t.Fatalf("Truncate(max): %v", err)
	}
	mustClose(t, f)
	d := time.Since(t0)
	t.Logf("truncate to %d bytes and close (root over %d tag blocks): %v", maxSize, content.MaxRootsChunks/content.TagEntries, d)
	if d > 3*time.Second {
		t.Errorf("truncate to the maximum and close took %v", d)
	}
	// A backing file longer than the maximum (hostile input) is refused.
	b.Truncate(e.lay.cipherSize(maxSize) + content.TagBlockSize + 1<<20)
	if _, err := e.OpenAt(b, testPlace); !errors.Is(err, ErrTooLarge) {
		t.Errorf("open of a backing file past the maximum: %v, want ErrTooLarge", err)
	}
}
