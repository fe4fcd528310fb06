package transport

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// memRoot is a tiny file system: one file "hello".
type memRoot struct{ fs.Inode }

func (r *memRoot) OnAdd(ctx context.Context) {
	f := r.NewPersistentInode(ctx, &fs.MemRegularFile{Data: []byte("hi"), Attr: fuse.Attr{Mode: 0o644}}, fs.StableAttr{})
	r.AddChild("hello", f, false)
}

// mountMem mounts memRoot with opts and unmounts it at the end of the test.
func mountMem(t *testing.T, opts Options) (*Mount, string, error) {
	t.Helper()
	return mountRoot(t, &memRoot{}, opts)
}

// mountRoot mounts root with opts and unmounts it at the end of the test.
func mountRoot(t *testing.T, root fs.InodeEmbedder, opts Options) (*Mount, string, error) {
	t.Helper()
	fstest.RequireFUSE(t)
	mnt := t.TempDir()
	zero := time.Duration(0)
	raw := fs.NewNodeFS(root, &fs.Options{EntryTimeout: &zero, AttrTimeout: &zero})
	m, err := New(raw, mnt, fuse.MountOptions{Name: "fuseuringtest", MaxWrite: 1 << 20, DirectMount: true}, opts)
	if err != nil {
		return nil, mnt, err
	}
	go m.Serve()
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
			abortConnection(t, mnt)
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
		m.Wait()
		m.Close()
	})
	waited := make(chan error, 1)
	go func() { waited <- m.WaitMount() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the mount hangs")
	}
	return m, mnt, nil
}

// abortConnection aborts the FUSE connection mounted on mnt through
// fusectl (mounting it if needed), so that a test whose mount hangs still
// ends: requests held back by the kernel then fail instead of waiting.
func abortConnection(t *testing.T, mnt string) {
	const ctl = "/sys/fs/fuse/connections"
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Log(err)
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || f[4] != mnt {
			continue
		}
		_, minor, _ := strings.Cut(f[2], ":")
		if _, err := os.Stat(ctl + "/" + minor); err != nil {
			unix.Mount("fusectl", ctl, "fusectl", 0, "")
		}
		if err := os.WriteFile(ctl+"/"+minor+"/abort", []byte("1"), 0); err != nil {
			t.Logf("abort %s: %v", mnt, err)
		}
	}
}

// readWithin reads p, failing the test if that hangs.
func readWithin(t *testing.T, p string) string {
	t.Helper()
	type res struct {
		b   []byte
		err error
	}
	c := make(chan res, 1)
	go func() { b, err := os.ReadFile(p); c <- res{b, err} }()
	select {
	case r := <-c:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return string(r.b)
	case <-time.After(20 * time.Second):
		t.Fatal("read through the mount hangs")
		return ""
	}
}

func requireURing(t *testing.T) {
	t.Helper()
	if err := Enable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %v", err)
		}
		t.Skip(err)
	}
}

// TestURingMount serves a go-fuse tree over the rings: every request of a
// read goes through them, none is left for the /dev/fuse reader.
func TestURingMount(t *testing.T) {
	requireURing(t)
	m, mnt, err := mountMem(t, Options{Mode: URing})
	if err != nil {
		t.Fatal(err)
	}
	if m.Transport != "io_uring" {
		t.Fatalf("transport %q (%s)", m.Transport, m.Why)
	}
	// A thread per ring, and the worker that reads /dev/fuse (FORGETs).
	if n, err := possibleCPUs(); err != nil || len(m.queues) != n || len(m.workers) != 1 || m.Waiters() != n+1 {
		t.Errorf("%d rings, %d workers, %d waiters, %d possible CPUs (%v)", len(m.queues), len(m.workers), m.Waiters(), n, err)
	}
	sum := func() (n uint64) {
		for _, c := range m.RingRequests() {
			n += c
		}
		return n
	}
	before := sum()
	for range 10 {
		if got := readWithin(t, filepath.Join(mnt, "hello")); got != "hi" {
			t.Fatalf("read %q", got)
		}
	}
	// Each read is at least LOOKUP, OPEN, READ (entry and attribute
	// timeouts are 0).
	if d := sum() - before; d < 30 {
		t.Errorf("10 reads, the rings answered %d requests", d)
	}
}

// TestURingRingsFailAfterInit: when INIT agreed on io_uring but the rings
// cannot start, auto turns the kernel back to /dev/fuse (the mount works,
// nothing hangs, one line says why) and uring fails and leaves no mount.
func TestURingRingsFailAfterInit(t *testing.T) {
	requireURing(t)
	var logged []string
	logf := func(f string, a ...any) { logged = append(logged, f) }
	m, mnt, err := mountMem(t, Options{Mode: Auto, Logf: logf, failQueues: errors.New("no rings today")})
	if err != nil {
		t.Fatal(err)
	}
	if m.Transport != "classic" || !strings.Contains(m.Why, "no rings today") {
		t.Fatalf("transport %q, why %q", m.Transport, m.Why)
	}
	if got := readWithin(t, filepath.Join(mnt, "hello")); got != "hi" {
		t.Fatalf("read %q", got)
	}
	if len(logged) != 1 {
		t.Errorf("log lines %q, want one", logged)
	}

	_, mnt2, err := mountMem(t, Options{Mode: URing, failQueues: errors.New("no rings today")})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("uring with failing rings: %v", err)
	}
	var st, parent unix.Stat_t
	unix.Stat(mnt2, &st)
	unix.Stat(filepath.Dir(mnt2), &parent)
	if st.Dev != parent.Dev {
		unix.Unmount(mnt2, unix.MNT_DETACH)
		t.Fatal("a failed uring mount stayed mounted")
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Auto, "auto": Auto, "uring": URing, "classic": Classic} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"io_uring", "Auto", "x"} {
		if _, err := ParseMode(in); err == nil {
			t.Errorf("ParseMode(%q) accepted", in)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string]int{"0\n": 1, "0-1\n": 2, "0-3,8-11": 12, "0,2": 3} {
		if got, err := parseCPUList([]byte(in)); err != nil || got != want {
			t.Errorf("parseCPUList(%q) = %d, %v", in, got, err)
		}
	}
	if _, err := parseCPUList([]byte("")); err == nil {
		t.Error("empty list accepted")
	}
}
