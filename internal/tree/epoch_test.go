package tree

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// withEpochs gives b's tree the keys of epochs 1 and 2 (2 current).
func (b *boundTree) withEpochs(t *testing.T) {
	t.Helper()
	var eps []Epoch
	for i := byte(1); i <= 2; i++ {
		key := bytes.Repeat([]byte{0x40 + i}, 32)
		k, err := keys.Derive(key)
		must(t, err)
		bk, err := keys.DeriveBinding(key)
		must(t, err)
		binder, err := bind.New(bk)
		must(t, err)
		eps = append(eps, Epoch{Names: k.Names, Binder: binder})
	}
	must(t, b.Epochs().Set(eps, 2))
}

// TestUncheckedDirIDEpoch (issue 18, I5): an unbound directory ID file
// (the storage's copy of a real directory's, with an older epoch, planted
// in a directory of its own) read by DirIDs.ReadUnchecked (fsck, the names
// freshness reports) does not change which key encrypts the names of the
// real directory, nor which decrypts them: only its verified ID file
// says, whether it was read before or after the planted one.
func TestUncheckedDirIDEpoch(t *testing.T) {
	b := newBoundTree(t)
	b.withEpochs(t)
	xn := mustName(t, b.Tree, b.id, "x")
	xid, err := b.Mkdir(NewDir(b.root, b.id, nil), xn, 0o700)
	must(t, err)
	xfd, err := backing.OpenSubdir(b.root, xn.Backing)
	must(t, err)
	defer backing.Close(xfd)
	if _, err := b.DirIDs().Read(xfd, b.Place(b.id, xn)); err != nil {
		t.Fatal(err)
	}
	if e := b.Epochs().Of(xid); e != 2 {
		t.Fatalf("x is of epoch %d, want 2", e)
	}
	want := mustName(t, b.Tree, xid, "new name")
	b.create(t, xfd, xid, want, []byte("data"))

	// The storage's copy of x's ID file, saying epoch 1, in a directory
	// of its own (not bound there).
	raw, err := os.ReadFile(filepath.Join(b.dir, xn.Backing, names.DirIDFile))
	must(t, err)
	binary.BigEndian.PutUint32(raw[2:6], 1)
	planted := filepath.Join(b.dir, "planted")
	must(t, os.Mkdir(planted, 0o700))
	must(t, os.WriteFile(filepath.Join(planted, names.DirIDFile), raw, 0o400))
	pfd, err := backing.OpenSubdir(b.root, "planted")
	must(t, err)
	defer backing.Close(pfd)

	check := func(when string) {
		t.Helper()
		if got := mustName(t, b.Tree, xid, "new name"); got.Backing != want.Backing {
			t.Fatalf("%s: a name in x is encrypted under another key (%s, want %s)", when, got.Backing, want.Backing)
		}
		if n, err := b.DecryptName(NewDir(xfd, xid, nil), want.Backing); err != nil || n.Plain != "new name" {
			t.Fatalf("%s: x's name decrypts to %q, %v", when, n.Plain, err)
		}
		if e := b.Epochs().Of(xid); e != 2 {
			t.Fatalf("%s: x is of epoch %d, want 2", when, e)
		}
	}
	id, _, err := b.DirIDs().ReadUnchecked(pfd)
	if err != nil || !bytes.Equal(id, xid) {
		t.Fatalf("the planted ID file: %x, %v", id, err)
	}
	check("planted ID file read after x's")

	// A tree that reads the planted ID file first, then x's.
	b.ep.mu.Lock()
	b.ep.dir, b.ep.hint = nil, nil
	b.ep.mu.Unlock()
	if _, _, err := b.DirIDs().ReadUnchecked(pfd); err != nil {
		t.Fatal(err)
	}
	if got := mustName(t, b.Tree, xid, "new name"); got.Backing == mustNameEpoch(t, b, xid, 1) {
		t.Fatal("the planted ID file picked the key a new name in x is encrypted with")
	}
	if _, err := b.DirIDs().Read(xfd, b.Place(b.id, xn)); err != nil {
		t.Fatal(err)
	}
	check("planted ID file read before x's")
	if got, err := b.read(xfd, xid, want); err != nil || string(got) != "data" {
		t.Fatalf("x's file: %q, %v", got, err)
	}
}

// mustNameEpoch is the backing name of plain in directory id under epoch
// e's names key.
func mustNameEpoch(t *testing.T, b *boundTree, id []byte, e uint32) string {
	t.Helper()
	enc, err := b.ep.namesOfEpoch(e).Encrypt(id, "new name")
	must(t, err)
	bn, _ := names.Backing(enc)
	return bn
}
