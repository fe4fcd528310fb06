package fileengine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// allocBacking is a seekCounter whose Stat tells alloc bytes allocated,
// as a backing file's stat does (st_blocks).
type allocBacking struct {
	*seekCounter
	alloc int64
}

func (a *allocBacking) Stat() (os.FileInfo, error) {
	fi, err := a.seekCounter.Stat()
	if err != nil {
		return nil, err
	}
	return allocInfo{fi, a.alloc}, nil
}

type allocInfo struct {
	os.FileInfo
	alloc int64
}

// Sys tells alloc in whole 512-byte blocks, rounded up as a file system
// allocates them.
func (i allocInfo) Sys() any { return &syscall.Stat_t{Size: i.Size(), Blocks: (i.alloc + 511) / 512} }

// TestDenseRootsNoSeek: the first read of a clean file of several groups
// whose backing has its size allocated loads every tag block without
// asking the backing where its data is (on a tmpfs, SEEK_HOLE walked the
// page cache of the whole file at every open); with fewer bytes allocated
// than its size it asks, as before. Both read back verified, and a tag
// block changed in the dense file still fails the root.
func TestDenseRootsNoSeek(t *testing.T) {
	e := newCompactEngine(t, content.AES256GCM, sequential(16))
	plain := randomBytes(rand.New(rand.NewPCG(16, 16)), 3<<20+5) // 4 groups of 256 4 KiB chunks
	stored := rootsFile(t, e, plain).Bytes()
	open := func(b []byte, alloc int64) (*allocBacking, []byte, error) {
		ab := &allocBacking{seekCounter: &seekCounter{MemBacking: NewMemBackingFrom(bytes.Clone(b))}, alloc: alloc}
		f, err := e.OpenAt(ab, testPlace)
		if err != nil {
			t.Fatalf("OpenAt: %v", err)
		}
		defer mustClose(t, f)
		got, err := readAll(f)
		return ab, got, err
	}
	for _, tc := range []struct {
		name  string
		alloc int64
		seeks bool
	}{
		{"allocated", int64(len(stored)), false},
		{"allocated past its end", int64(len(stored)) + 8<<20, false},
		{"sparse", int64(len(stored)) - 1<<20, true},
	} {
		ab, got, err := open(stored, tc.alloc)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("%s: read %v (%d bytes, want %d)", tc.name, err, len(got), len(plain))
		}
		if (ab.seeks > 0) != tc.seeks {
			t.Fatalf("%s: %d SeekData calls, want seeks %v", tc.name, ab.seeks, tc.seeks)
		}
	}
	bad := bytes.Clone(stored)
	bad[e.lay.tagBlockOffset(2)+5] ^= 1 // an entry of group 2
	if _, _, err := open(bad, int64(len(bad))); !errors.Is(err, content.ErrBadRoot) {
		t.Fatalf("a changed tag block of a dense file: %v, want the root error", err)
	}
}
