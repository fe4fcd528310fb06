package fresh

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"golang.org/x/sys/unix"
)

// TestBucketTablesFollowTheFile: a bucket's table is read again whenever
// its file is another (replaced by a rename) or was written in place (a
// sync tool), so a reader never takes a slot of an older version.
func TestBucketTablesFollowTheFile(t *testing.T) {
	dir := t.TempDir()
	dev := [fc.IDSize]byte{1}
	mdir := filepath.Join(dir, manifestsDir(dev))
	if err := os.Mkdir(mdir, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := backing.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close(root)
	v := &Vault{root: root}
	a, b := [fc.IDSize]byte{9, 1}, [fc.IDSize]byte{9, 2}
	put := func(es ...fc.BucketEntry) {
		t.Helper()
		file, err := fc.MarshalBucket(9, es)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(mdir, fc.BucketName(9))
		if err := os.WriteFile(p+".new", file, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".new", p); err != nil {
			t.Fatal(err)
		}
	}
	read := func(id [fc.IDSize]byte, want string) {
		t.Helper()
		got, err := v.readBucketed(dev, id)
		if want == "" {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%x: %q, %v; want not found", id, got, err)
			}
			return
		}
		if err != nil || string(got) != want {
			t.Fatalf("%x: %q, %v; want %q", id, got, err, want)
		}
	}
	put(fc.BucketEntry{DirID: b, File: []byte("bee")})
	read(b, "bee")
	read(a, "")
	put(fc.BucketEntry{DirID: a, File: []byte("a longer one")}, fc.BucketEntry{DirID: b, File: []byte("bee2")})
	read(b, "bee2")
	read(a, "a longer one")
	// In place, same size: only the times tell.
	p := filepath.Join(mdir, fc.BucketName(9))
	file, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	file = bytes.Replace(file, []byte("bee2"), []byte("BEE2"), 1)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(file, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	read(b, "BEE2")
	// Cut short under a cached table: refused, never a short read taken
	// for the manifest.
	if err := os.Truncate(p, int64(len(file)-2)); err != nil {
		t.Fatal(err)
	}
	if got, err := v.readBucketed(dev, b); !errors.Is(err, fc.ErrMalformed) {
		t.Fatalf("truncated bucket: %q, %v", got, err)
	}
}

// TestBucketTablesBounded: the tables kept never exceed maxCachedSlots
// slots, whatever CIPHERDIR holds; a table replaced is not counted twice.
func TestBucketTablesBounded(t *testing.T) {
	var c bucketTables
	st := &unix.Stat_t{Ino: 1}
	half := make([]fc.BucketSlot, maxCachedSlots/2+1)
	c.put(bucketKey{b: 1}, st, half)
	c.put(bucketKey{b: 1}, st, half) // the same bucket again
	if c.get(bucketKey{b: 1}, st) == nil || c.slots != len(half) {
		t.Fatalf("one table, replaced: %d slots counted", c.slots)
	}
	c.put(bucketKey{b: 2}, st, half)
	if c.slots > maxCachedSlots || c.get(bucketKey{b: 1}, st) != nil || c.get(bucketKey{b: 2}, st) == nil {
		t.Fatalf("over the bound: %d slots held", c.slots)
	}
}
