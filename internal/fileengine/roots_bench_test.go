package fileengine

import (
	"slices"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// BenchmarkRootsPaired measures the cost of file roots in the engine, as
// BenchmarkPaired does (both sides back to back in every iteration): each
// pair is roots-vs-bound, the same work on a bound engine with and without
// roots, at the default chunk size, in a MemBacking (fsync is free there:
// the two fsyncs of a changed file are measured through the mount,
// BenchmarkRootsStream). "ratio" is throughput(roots)/throughput(bound),
// the median over the iterations.
func BenchmarkRootsPaired(b *testing.B) {
	data := make([]byte, benchFile)
	buf := make([]byte, benchFile)
	engines := func(par ParallelOptions) (roots, bound *Engine) {
		roots = newRootsEngine(b, content.AES256GCM, benchChunk, Options{Parallel: par})
		ck, hk := testKeys()
		s, err := content.NewBoundSuite(content.AES256GCM, benchChunk, ck, hk)
		if err != nil {
			b.Fatal(err)
		}
		bo := Options{Parallel: par}
		bo.Binder = roots.bind.(boundTo).b
		return roots, NewEngine(s, bo)
	}
	writer := func(e *Engine, req int) func(*testing.B) {
		m := NewMemBacking()
		return func(b *testing.B) {
			m.Truncate(0)
			f := openRoots(b, e, m)
			for off := 0; off < len(data); off += req {
				if _, err := f.WriteAt(data[off:min(off+req, len(data))], int64(off)); err != nil {
					b.Fatal(err)
				}
			}
			mustClose(b, f)
		}
	}
	reader := func(e *Engine, req int) func(*testing.B) {
		m := NewMemBacking()
		f := openRoots(b, e, m)
		mustWrite(b, f, data, 0)
		mustClose(b, f)
		return func(b *testing.B) {
			f := openRoots(b, e, m) // a new File: the tag blocks are loaded and checked
			readWhole(b, f, buf, req)
			mustClose(b, f)
		}
	}
	// overwriter: 4 KiB writes at 64 places of a 10 MiB file, then close
	// (roots: DIRTY header write, then the root over 40 tag blocks).
	overwriter := func(e *Engine) func(*testing.B) {
		m := NewMemBacking()
		f := openRoots(b, e, m)
		mustWrite(b, f, data, 0)
		mustClose(b, f)
		return func(b *testing.B) {
			f := openRoots(b, e, m)
			for k := range 64 {
				mustWrite(b, f, data[:4096], int64(k)*(benchFile/64)+100)
			}
			mustClose(b, f)
		}
	}
	seqR, seqB := engines(ParallelOptions{})
	parR, parB := engines(ParallelOptions{Enabled: true})
	pairs := []struct {
		name string
		a, b func(*testing.B)
	}{
		{"seqwrite128k", writer(seqR, 128<<10), writer(seqB, 128<<10)},
		{"parwrite1m", writer(parR, 1<<20), writer(parB, 1<<20)},
		{"seqread128k", reader(seqR, 128<<10), reader(seqB, 128<<10)},
		{"parread1m", reader(parR, 1<<20), reader(parB, 1<<20)},
		{"overwrite4k-x64", overwriter(seqR), overwriter(seqB)},
	}
	for _, p := range pairs {
		b.Run(p.name+"/roots-vs-bound", func(b *testing.B) {
			p.a(b)
			p.b(b)
			var ratios []float64
			b.SetBytes(2 * benchFile)
			for i := 0; b.Loop(); i++ {
				// Alternate which side runs first, and keep the ratio of
				// each iteration: the median of those resists the bursts
				// of other processes better than a ratio of sums.
				first, second := p.a, p.b
				if i%2 == 1 {
					first, second = p.b, p.a
				}
				t0 := time.Now()
				first(b)
				t1 := time.Now()
				second(b)
				d1, d2 := t1.Sub(t0), time.Since(t1)
				if i%2 == 1 {
					d1, d2 = d2, d1
				}
				ratios = append(ratios, float64(d2)/float64(d1))
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "ratio")
		})
	}
}
