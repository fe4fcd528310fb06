package tree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"golang.org/x/sys/unix"
)

// boundTree is a tree with location binding over a temporary CIPHERDIR.
type boundTree struct {
	*Tree
	dir  string
	root int
	id   []byte
	eng  *fileengine.Engine
}

func newBoundTree(t *testing.T) *boundTree {
	t.Helper()
	master := bytes.Repeat([]byte{7}, 32)
	k, err := keys.Derive(master)
	must(t, err)
	bk, err := keys.DeriveBinding(master)
	must(t, err)
	binder, err := bind.New(bk)
	must(t, err)
	suite, err := content.NewBoundSuite(content.AES256GCM, 4096, k.Contents, k.HeaderMAC)
	must(t, err)
	dir := t.TempDir()
	links := NewLinkStore(nil, dir, binder, nil)
	links.rand = strings.NewReader(strings.Repeat("r", 1<<16))
	eng := fileengine.NewEngine(suite, fileengine.Options{Binder: binder, Links: links})
	tr, err := NewBound(k, nil, nil, &Binding{Binder: binder, VaultID: bytes.Repeat([]byte{9}, 16), Engine: eng, Links: links})
	must(t, err)
	links.rand = tr.rand
	fd, err := backing.OpenRoot(dir)
	must(t, err)
	t.Cleanup(func() { backing.Close(fd) })
	id, err := tr.DirIDs().InitRoot(fd)
	must(t, err)
	return &boundTree{Tree: tr, dir: dir, root: fd, id: id, eng: eng}
}

// openAt opens name n of dirfd (directory ID id) through the engine.
func (b *boundTree) openAt(dirfd int, id []byte, n Name) (*fileengine.File, func(), error) {
	fd, _, err := backing.OpenRegular(dirfd, n.Backing, unix.O_RDWR)
	if err != nil {
		return nil, nil, err
	}
	bf := backing.NewFile(fd, nil)
	f, err := b.eng.OpenAt(bf, b.Place(id, n))
	if err != nil {
		bf.Close()
		return nil, nil, err
	}
	return f, func() { f.Close(); bf.Close() }, nil
}

// read reads name n of dirfd whole.
func (b *boundTree) read(dirfd int, id []byte, n Name) ([]byte, error) {
	f, done, err := b.openAt(dirfd, id, n)
	if err != nil {
		return nil, err
	}
	defer done()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf, nil
}

// create makes file n in dirfd with data, synced.
func (b *boundTree) create(t *testing.T, dirfd int, id []byte, n Name, data []byte) {
	t.Helper()
	fd, err := b.Create(NewDir(dirfd, nil, nil), n, 0, 0o600)
	must(t, err)
	bf := backing.NewFile(fd, nil)
	defer bf.Close()
	f, err := b.eng.OpenAt(bf, b.Place(id, n))
	must(t, err)
	defer f.Close()
	_, err = f.WriteAt(data, 0)
	must(t, err)
	must(t, f.Sync())
}

// header reads the v2 header of name n of dirfd.
func (b *boundTree) header(t *testing.T, dirfd int, n Name) content.Header {
	t.Helper()
	raw := make([]byte, content.HeaderSizeV2)
	fd, _, err := backing.OpenRegular(dirfd, n.Backing, unix.O_RDONLY)
	must(t, err)
	defer backing.Close(fd)
	_, err = unix.Pread(fd, raw, 0)
	must(t, err)
	h, err := b.eng.Suite().ParseHeader(raw)
	must(t, err)
	return h
}

// linksFiles lists the links files in the root.
func (b *boundTree) linksFiles(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(b.dir, bind.LinksPrefix+"*"))
	must(t, err)
	return m
}

// fiveLinks makes file "f0" in the root with names f0..f4 (f3 and f4 in
// subdirectory "sub") and returns the names with their directories.
func fiveLinks(t *testing.T, b *boundTree, data []byte) (names []Name, fds []int, ids [][]byte) {
	t.Helper()
	subN := mustName(t, b.Tree, b.id, "sub")
	subID, err := b.Mkdir(NewDir(b.root, b.id, nil), subN, 0o700)
	must(t, err)
	sub, err := backing.OpenSubdir(b.root, subN.Backing)
	must(t, err)
	t.Cleanup(func() { backing.Close(sub) })
	for i := range 5 {
		fd, id := b.root, b.id
		if i >= 3 {
			fd, id = sub, subID
		}
		n := mustName(t, b.Tree, id, fmt.Sprintf("f%d", i))
		if i == 0 {
			b.create(t, fd, id, n, data)
		} else {
			must(t, b.Link(NewDir(fds[0], ids[0], nil), names[0], NewDir(fd, id, nil), n))
		}
		names, fds, ids = append(names, n), append(fds, fd), append(ids, id)
	}
	return names, fds, ids
}

// TestLinksFile: a file gets five names (the third moves its bindings to
// the links file), each reads the contents, unlinks and a rename keep
// the others readable, and back at two names the links file goes.
func TestLinksFile(t *testing.T) {
	b := newBoundTree(t)
	data := []byte("shared by five names")
	ns, fds, ids := fiveLinks(t, b, data)
	h := b.header(t, fds[0], ns[0])
	if h.Flags&content.FlagLinks == 0 || h.Bindings != [content.BindingSlots]bind.Binding{} {
		t.Fatalf("header after 5 links: flags %#x, bindings %x; want LINKS and no slots", h.Flags, h.Bindings)
	}
	if got := b.linksFiles(t); len(got) != 1 || filepath.Base(got[0]) != bind.LinksName(h.FileID[:]) {
		t.Fatalf("links files %v, want one for %x", got, h.FileID)
	}
	for i := range ns {
		if got, err := b.read(fds[i], ids[i], ns[i]); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read f%d: %q, %v", i, got, err)
		}
	}
	// Elsewhere, the contents are misplaced.
	other := mustName(t, b.Tree, b.id, "other")
	must(t, unix.Linkat(b.root, ns[0].Backing, b.root, other.Backing, 0))
	if _, err := b.read(b.root, b.id, other); !errors.Is(err, bind.ErrMisplaced) {
		t.Fatalf("read at a name linked behind the vault's back: %v, want ErrMisplaced", err)
	}
	must(t, unix.Unlinkat(b.root, other.Backing, 0))

	// Rename f1 to g1: g1 reads, f1's place no longer binds.
	g1 := mustName(t, b.Tree, b.id, "g1")
	must(t, b.Rename(NewDir(b.root, b.id, nil), ns[1], NewDir(b.root, b.id, nil), g1, 0))
	if got, err := b.read(b.root, b.id, g1); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read renamed g1: %q, %v", got, err)
	}
	f, done, err := b.openAt(b.root, b.id, ns[0])
	must(t, err)
	if n, ok := f.Links(); !ok || n != 5 {
		t.Fatalf("Links() = %d, %v; want 5 (f0, g1, f2, f3, f4)", n, ok)
	}
	if err := f.CheckPlace(b.Place(b.id, ns[1])); !errors.Is(err, bind.ErrMisplaced) {
		t.Fatalf("old name's place after rename: %v, want ErrMisplaced", err)
	}
	done()
	// Unlink f3 and f4: three names left, still in the links file.
	must(t, b.Unlink(NewDir(fds[3], ids[3], nil), ns[3], 0))
	must(t, b.Unlink(NewDir(fds[4], ids[4], nil), ns[4], 0))
	if h := b.header(t, fds[0], ns[0]); h.Flags&content.FlagLinks == 0 {
		t.Fatal("three names: the header left the links file")
	}
	// Unlink f2: two names fit the header again; the links file goes.
	must(t, b.Unlink(NewDir(fds[2], ids[2], nil), ns[2], 0))
	h = b.header(t, fds[0], ns[0])
	if h.Flags&content.FlagLinks != 0 {
		t.Fatal("two names: still LINKS")
	}
	if got := b.linksFiles(t); len(got) != 0 {
		t.Fatalf("links file left after going back to the header: %v", got)
	}
	for _, n := range []Name{ns[0], g1} {
		if got, err := b.read(b.root, b.id, n); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %s with two names: %q, %v", n.Backing, got, err)
		}
	}
}

// TestLinksFileTamper: a links file deleted, corrupted, or replaced by
// another file's makes the file unreadable at every name
// (bind.ErrBadLinks, EIO); one rolled back to an older version of the
// same file is accepted (a freshness matter, design §6).
func TestLinksFileTamper(t *testing.T) {
	data := []byte("five names")
	setup := func(t *testing.T) (*boundTree, []Name, []int, [][]byte, string) {
		b := newBoundTree(t)
		ns, fds, ids := fiveLinks(t, b, data)
		h := b.header(t, fds[0], ns[0])
		return b, ns, fds, ids, filepath.Join(b.dir, bind.LinksName(h.FileID[:]))
	}
	wantBad := func(t *testing.T, b *boundTree, ns []Name, fds []int, ids [][]byte) {
		t.Helper()
		for i := range ns {
			if _, err := b.read(fds[i], ids[i], ns[i]); !errors.Is(err, bind.ErrBadLinks) {
				t.Fatalf("read f%d: %v, want ErrBadLinks", i, err)
			}
		}
	}
	t.Run("deleted", func(t *testing.T) {
		b, ns, fds, ids, lf := setup(t)
		must(t, os.Remove(lf))
		wantBad(t, b, ns, fds, ids)
	})
	t.Run("corrupted", func(t *testing.T) {
		b, ns, fds, ids, lf := setup(t)
		raw, err := os.ReadFile(lf)
		must(t, err)
		raw[40] ^= 1
		must(t, os.Chmod(lf, 0o600))
		must(t, os.WriteFile(lf, raw, 0o600))
		wantBad(t, b, ns, fds, ids)
	})
	t.Run("truncated", func(t *testing.T) {
		b, ns, fds, ids, lf := setup(t)
		must(t, os.Chmod(lf, 0o600))
		must(t, os.Truncate(lf, 60))
		wantBad(t, b, ns, fds, ids)
	})
	t.Run("another-file's", func(t *testing.T) {
		// A second five-name file, whose links file binds the same
		// places' names of its own: swapped in, it must not open the
		// first file's contents.
		b, ns, fds, ids, lf := setup(t)
		sub2 := mustName(t, b.Tree, b.id, "sub2")
		id2, err := b.Mkdir(NewDir(b.root, b.id, nil), sub2, 0o700)
		must(t, err)
		fd2, err := backing.OpenSubdir(b.root, sub2.Backing)
		must(t, err)
		defer backing.Close(fd2)
		var n2 []Name
		for i := range 3 {
			n := mustName(t, b.Tree, id2, fmt.Sprintf("x%d", i))
			if i == 0 {
				b.create(t, fd2, id2, n, []byte("other"))
			} else {
				must(t, b.Link(NewDir(fd2, id2, nil), n2[0], NewDir(fd2, id2, nil), n))
			}
			n2 = append(n2, n)
		}
		h2 := b.header(t, fd2, n2[0])
		other := filepath.Join(b.dir, bind.LinksName(h2.FileID[:]))
		must(t, os.Rename(other, lf))
		wantBad(t, b, ns, fds, ids)
	})
	t.Run("rolled-back", func(t *testing.T) {
		b, ns, fds, ids, lf := setup(t)
		old, err := os.ReadFile(lf)
		must(t, err)
		must(t, b.Unlink(NewDir(fds[4], ids[4], nil), ns[4], 0))
		must(t, os.Chmod(lf, 0o600))
		must(t, os.WriteFile(lf, old, 0o600))
		// Every name reads: the older list binds a superset. The
		// removed name's place is valid again: rollback, §6.
		for i := range 4 {
			if got, err := b.read(fds[i], ids[i], ns[i]); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read f%d after rollback: %q, %v", i, got, err)
			}
		}
	})
	t.Run("flag-kept-slots-forged", func(t *testing.T) {
		// Clearing LINKS in the header (to fall back on its slots)
		// breaks the header MAC.
		b, ns, fds, _, _ := setup(t)
		p := filepath.Join(b.dir, ns[0].Backing)
		raw, err := os.ReadFile(p)
		must(t, err)
		raw[3] &^= content.FlagLinks
		must(t, os.WriteFile(p, raw, 0o600))
		if _, err := b.read(fds[0], b.id, ns[0]); !errors.Is(err, content.ErrBadHeader) {
			t.Fatalf("read with LINKS cleared: %v, want ErrBadHeader", err)
		}
	})
}

// TestLinksLimit: a file may have bind.MaxLinks names in its links file;
// one more is fileengine.ErrTooManyLinks (EMLINK). Checked on the engine's
// File with a links file of MaxLinks-1 entries made directly.
func TestLinksLimit(t *testing.T) {
	b := newBoundTree(t)
	ns, fds, ids := fiveLinks(t, b, []byte("x"))
	f, done, err := b.openAt(fds[0], ids[0], ns[0])
	must(t, err)
	id, _ := f.ID()
	done()
	l, err := b.Links().Load(id)
	must(t, err)
	for len(l.Bindings) < bind.MaxLinks-1 {
		var s bind.Binding
		s[0], s[1], s[2] = 1, byte(len(l.Bindings)), byte(len(l.Bindings)>>8)
		l.Bindings = append(l.Bindings, s)
	}
	l.Gen++
	must(t, b.Links().Store(l, true))
	n := mustName(t, b.Tree, b.id, "last")
	must(t, b.Link(NewDir(fds[0], ids[0], nil), ns[0], NewDir(b.root, b.id, nil), n))
	if _, err := b.read(b.root, b.id, n); err != nil {
		t.Fatalf("read the %dth name: %v", bind.MaxLinks, err)
	}
	n2 := mustName(t, b.Tree, b.id, "one-too-many")
	if err := b.Link(NewDir(fds[0], ids[0], nil), ns[0], NewDir(b.root, b.id, nil), n2); !errors.Is(err, fileengine.ErrTooManyLinks) {
		t.Fatalf("link %d: %v, want ErrTooManyLinks", bind.MaxLinks+1, err)
	}
}
