package fileengine

import (
	"bytes"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// syncCounter is a MemBacking that counts fsyncs.
type syncCounter struct {
	*MemBacking
	syncs int
}

func (s *syncCounter) Sync() error { s.syncs++; return nil }

// TestRootsImplicitPathNoSync: open, write, close of an existing clean
// file (and of a new one) makes no fsync (docs/format.md §16,
// "Durability": only an explicit fsync is a barrier); an fsync makes the
// data durable before the clean header and the header after it (two).
func TestRootsImplicitPathNoSync(t *testing.T) {
	e := newRootsEngine(t, content.AES256GCM, 4096, Options{})
	plain := bytes.Repeat([]byte("roots"), 3000)
	m := &syncCounter{MemBacking: rootsFile(t, e, plain)}
	f, err := e.OpenAt(m, testPlace)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte("edit"), 5000)
	mustClose(t, f)
	if m.syncs != 0 {
		t.Errorf("open-write-close of a clean file: %d fsyncs, want 0", m.syncs)
	}
	copy(plain[5000:], "edit")
	readBack(t, e, m.MemBacking, plain)

	f, err = e.OpenAt(m, testPlace)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte("sync"), 100)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if m.syncs != 2 {
		t.Errorf("write and fsync: %d fsyncs, want 2 (data before the clean header, then the header)", m.syncs)
	}
	mustClose(t, f)
	if m.syncs != 2 {
		t.Errorf("close after fsync: %d fsyncs, want none more", m.syncs-2)
	}
	copy(plain[100:], "sync")
	readBack(t, e, m.MemBacking, plain)
}
