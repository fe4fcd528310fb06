package cli

import (
	"bytes"
	"os"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// TestCompactSmallFileMount (issue 22): on a default vault made by
// encryptfs init, through the mount, a 1-byte file takes at most 256
// bytes of backing (header and chunk: no tag block), a file of one full
// chunk has no tag block, a file grown to two chunks reads back after a
// remount, and truncated back to one chunk is header and chunk again.
// Chunk 0 of a 1-chunk file zeroed, or the file cut to its header, reads
// EIO.
func TestCompactSmallFileMount(t *testing.T) {
	v := newTamperVault(t)
	s := v.geometry(t)
	if !s.Compact() {
		t.Fatal("init did not turn CompactRoots on")
	}
	cs := int64(s.ChunkSize())
	v.mount(t)
	must(t, os.WriteFile(v.path("one"), []byte{'x'}, 0o644))
	full := bytes.Repeat([]byte{'c'}, int(cs))
	must(t, os.WriteFile(v.path("full"), full, 0o644))
	grown := append(bytes.Clone(full), "second chunk"...)
	must(t, os.WriteFile(v.path("grown"), full, 0o644))
	f, err := os.OpenFile(v.path("grown"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.Write(grown[cs:])
	must(t, err)
	must(t, f.Close())
	must(t, os.WriteFile(v.path("shrunk"), grown, 0o644))
	must(t, os.Truncate(v.path("shrunk"), cs-1))
	v.unmount(t)

	one := storedAs(t, s, v.backing(t, "one"), 1)
	if len(one) > 256 || int64(len(one)) != content.HeaderSizeV2+1+int64(s.Overhead()) {
		t.Errorf("1-byte file: %d bytes of backing, want header, 1 byte and the chunk overhead (<= 256)", len(one))
	}
	if st := storedAs(t, s, v.backing(t, "full"), cs); int64(len(st)) != content.HeaderSizeV2+int64(s.CipherChunkSize()) {
		t.Errorf("1-chunk file: %d bytes, want no tag block", len(st))
	}
	storedAs(t, s, v.backing(t, "grown"), int64(len(grown)))
	storedAs(t, s, v.backing(t, "shrunk"), cs-1)

	v.mount(t)
	for name, want := range map[string][]byte{"one": {'x'}, "full": full, "grown": grown, "shrunk": grown[:cs-1]} {
		got, err := os.ReadFile(v.path(name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes, %v", name, len(got), err)
		}
	}
	v.unmount(t)

	p := v.backing(t, "full")
	cur := storedAs(t, s, p, cs)
	zeroed := bytes.Clone(cur)
	clear(zeroed[content.HeaderSizeV2:])
	putBack(t, p, zeroed)
	v.wantEIO(t, "full", full)
	putBack(t, p, cur[:content.HeaderSizeV2])
	v.wantEIO(t, "full", full)
}
