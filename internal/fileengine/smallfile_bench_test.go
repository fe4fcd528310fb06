package fileengine

import (
	"io"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// BenchmarkSmallFile measures the engine's CPU per small file, as tar -x
// and md5sum cost it (a MemBacking: no system calls), on a format-1
// engine, on a compact-roots one with trimmed leaves (encryptfs init's)
// and on one with whole-block leaves (vaults made before them).
func BenchmarkSmallFile(b *testing.B) {
	data := make([]byte, 5000)
	buf := make([]byte, 16<<10)
	v1 := NewEngine(newTestSuite(b, content.AES256GCM, 16<<10), Options{})
	compactRoots = true
	v2whole := newRootsEngine(b, content.AES256GCM, 16<<10, Options{})
	trimmedLeaves = true
	v2 := newRootsEngine(b, content.AES256GCM, 16<<10, Options{})
	compactRoots, trimmedLeaves = false, false
	for _, c := range []struct {
		name string
		e    *Engine
		open func(testing.TB, *Engine, *MemBacking) *File
	}{{"v1", v1, openMem}, {"v2", v2, openRoots}, {"v2whole", v2whole, openRoots}} {
		b.Run(c.name+"/write", func(b *testing.B) {
			b.ReportAllocs()
			m := NewMemBacking()
			for b.Loop() {
				m.Truncate(0)
				f := c.open(b, c.e, m)
				mustWrite(b, f, data[:4096], 0)
				mustWrite(b, f, data[4096:], 4096)
				mustClose(b, f)
			}
		})
		// read: again by the engine that wrote it (under whole-block
		// leaves the root memo knows it; under trimmed leaves it
		// remembers nothing: rootmemo.go, memoWorth); read-cold: as
		// after a remount (the memo knows nothing).
		for _, cold := range []bool{false, true} {
			b.Run(c.name+map[bool]string{false: "/read", true: "/read-cold"}[cold], func(b *testing.B) {
				b.ReportAllocs()
				m := NewMemBacking()
				f := c.open(b, c.e, m)
				mustWrite(b, f, data, 0)
				mustClose(b, f)
				for b.Loop() {
					if cold {
						c.e.memo.mu.Lock()
						clear(c.e.memo.m)
						c.e.memo.mu.Unlock()
					}
					f := c.open(b, c.e, m)
					if n, err := f.ReadAt(buf, 0); n != len(data) || err != io.EOF {
						b.Fatalf("read %d bytes: %v", n, err)
					}
					mustClose(b, f)
				}
			})
		}
	}
}
