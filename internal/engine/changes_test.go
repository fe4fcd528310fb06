package engine_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// told records what the engine tells (engine.Changes).
type told struct {
	mu      sync.Mutex
	got     []string
	all     int
	batches atomic.Uint64
}

func (c *told) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, s)
}

func (c *told) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.got
	c.got = nil
	c.batches.Add(1)
	return g
}

func (c *told) Touched(d []byte, n string) { c.add(fmt.Sprintf("touched %x/%s", d, n)) }
func (c *told) Wrote(d []byte, n string)   { c.add(fmt.Sprintf("wrote %x/%s", d, n)) }
func (c *told) Made(d []byte, n string)    { c.add(fmt.Sprintf("made %x/%s", d, n)) }
func (c *told) Created(d []byte, n string) { c.add(fmt.Sprintf("created %x/%s", d, n)) }
func (c *told) Removed(d []byte, n string) { c.add(fmt.Sprintf("removed %x/%s", d, n)) }
func (c *told) MadeDir(d []byte, n string, id []byte) {
	c.add(fmt.Sprintf("madedir %x/%s %x", d, n, id))
}
func (c *told) Renamed(f []byte, fn string, t []byte, tn string, x bool) {
	c.add(fmt.Sprintf("renamed %x/%s %x/%s %v", f, fn, t, tn, x))
}
func (c *told) Header(d []byte, n string, id []byte, gen uint64) {
	c.add(fmt.Sprintf("header %x/%s", d, n))
}
func (c *told) Gone(d []byte)           { c.add(fmt.Sprintf("gone %x", d)) }
func (c *told) All()                    { c.mu.Lock(); c.all++; c.mu.Unlock() }
func (c *told) Batches() *atomic.Uint64 { return &c.batches }

// TestChangesTold: each mutator of engine.Dir tells its change by
// (directory ID, backing name) once it is made; an open file tells its
// first content change after each batch, and the headers it writes.
func TestChangesTold(t *testing.T) {
	v, _ := newVault(t, true)
	c := &told{}
	v.SetChanges(c)
	d := root(t, v)
	at := func(how string, n engine.Name) string { return fmt.Sprintf("%s %x/%s", how, d.ID(), n.Backing) }
	n := create(t, d, "f", "hello")
	got := c.take()
	for _, w := range []string{at("created", n), at("header", n)} {
		if !slices.Contains(got, w) {
			t.Errorf("create and write: told %q, want %q among them", got, w)
		}
	}
	// The creation noted the name for this window: the first write
	// needs no call of its own.
	if w := at("wrote", n); slices.Contains(got, w) {
		t.Errorf("create and write: told %q, want no %q", got, w)
	}
	f, err := d.Open(n, engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	for i := range 3 {
		if _, err := f.WriteAt([]byte("x"), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.take(); slices.Index(got, at("wrote", n)) < 0 || len(slices.DeleteFunc(got, func(s string) bool { return s != at("wrote", n) })) != 1 {
		t.Errorf("three writes in one batch told %q, want one %q", got, at("wrote", n))
	}
	if _, err := f.WriteAt([]byte("y"), 0); err != nil {
		t.Fatal(err)
	}
	if got := c.take(); !slices.Contains(got, at("wrote", n)) {
		t.Errorf("a write after a batch told %q, want %q", got, at("wrote", n))
	}
	// An xattr is not contents: told as Touched, which freshness does
	// not take for a content change (it reads the name back).
	o, err := f.Object(true)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.SetXattr("user.k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if got := c.take(); !slices.Contains(got, at("touched", n)) || slices.Contains(got, at("wrote", n)) {
		t.Errorf("an xattr set told %q, want %q alone", got, at("touched", n))
	}

	// A directory made is told with its ID; an xattr set on it later is
	// told at its entry, which freshness takes as "read it back".
	sn, _ := d.NewName("sub")
	sid, err := d.Mkdir(sn, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if got, w := c.take(), fmt.Sprintf("madedir %x/%s %x", d.ID(), sn.Backing, sid); !slices.Contains(got, w) {
		t.Errorf("mkdir told %q, want %q", got, w)
	}
	sub, err := d.Sub(sn)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := sub.Object().SetXattr("user.k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if got := c.take(); !slices.Contains(got, at("touched", sn)) {
		t.Errorf("an xattr set on a new directory told %q, want %q", got, at("touched", sn))
	}

	// Renamed, the file tells its content changes at its new name.
	m, _ := d.NewName("g")
	if err := d.Rename(n, d, m, 0); err != nil {
		t.Fatal(err)
	}
	if got := c.take(); !slices.Contains(got, fmt.Sprintf("renamed %x/%s %x/%s false", d.ID(), n.Backing, d.ID(), m.Backing)) {
		t.Errorf("rename told %q", got)
	}
	if err := f.Truncate(1); err != nil {
		t.Fatal(err)
	}
	if got := c.take(); !slices.Contains(got, at("wrote", m)) || slices.Contains(got, at("wrote", n)) {
		t.Errorf("truncate after rename told %q, want %q", got, at("wrote", m))
	}
	// A file replaced by a rename, still open, no longer tells that name.
	h := create(t, d, "h", "replaced")
	old, err := d.Open(h, engine.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Release()
	k := create(t, d, "k", "replacing")
	if err := d.Rename(k, d, h, 0); err != nil {
		t.Fatal(err)
	}
	c.take()
	if _, err := old.WriteAt([]byte("z"), 0); err != nil {
		t.Fatal(err)
	}
	if got := c.take(); slices.Contains(got, at("wrote", h)) || slices.Contains(got, at("header", h)) {
		t.Errorf("a write to the file a rename replaced told %q", got)
	}
	if err := d.Unlink(m, 0); err != nil {
		t.Fatal(err)
	}
	if got := c.take(); !slices.Contains(got, at("removed", m)) {
		t.Errorf("unlink told %q", got)
	}
}

// TestLocate: the engine finds a directory again by its ID, across
// renames of it and of its parent made through the engine, and never
// hands out a directory whose ID is not the one asked for.
func TestLocate(t *testing.T) {
	v, dir := newVault(t, true)
	c := &told{}
	v.SetChanges(c)
	d := root(t, v)
	an, _ := d.NewName("a")
	if _, err := d.Mkdir(an, 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := d.Sub(an)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	bn, _ := a.NewName("b")
	bid, err := a.Mkdir(bn, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	check := func(id []byte, want bool) {
		t.Helper()
		fd, err := v.Locate(id)
		if (err == nil) != want {
			t.Fatalf("Locate: %v, want found %v", err, want)
		}
		if err == nil {
			defer backing.Close(fd)
			f, perr := tree.ParseDirIDFile(tree.ReadDirIDFile(fd).Raw)
			if perr != nil || !bytes.Equal(f.ID, id) {
				t.Fatalf("Locate opened directory %x, want %x", f.ID, id)
			}
		}
	}
	check(bid, true)
	check(a.ID(), true)
	check(d.ID(), true)
	cn, _ := d.NewName("c")
	if err := d.Rename(an, d, cn, 0); err != nil {
		t.Fatal(err)
	}
	check(bid, true)
	// Moved behind the engine's back: not found where it was, and the
	// link is dropped (the caller walks).
	if err := unix.Renameat(unix.AT_FDCWD, filepath.Join(dir, cn.Backing), unix.AT_FDCWD, filepath.Join(dir, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	check(bid, false)
	check(a.ID(), false)
	// A walk tells it where it is now.
	v.Found(a.ID(), d.ID(), "elsewhere")
	v.Found(bid, a.ID(), bn.Backing)
	check(bid, true)
	c.take()
	if err := a.Rmdir(bn); err != nil {
		t.Fatal(err)
	}
	if got := c.take(); !slices.Contains(got, fmt.Sprintf("gone %x", bid)) {
		t.Errorf("rmdir told %q, want the directory gone", got)
	}
	check(bid, false)
	check([]byte("no such directory"), false)
	// The session's last batch runs after the engine closed.
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	check(a.ID(), true)
}
