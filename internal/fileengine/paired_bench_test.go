package fileengine

import (
	"sync"
	"testing"
	"time"
)

// BenchmarkPaired measures each target ratio inside one benchmark: every
// iteration runs the two sides back to back (10 MiB each) and times them
// separately, so load from other processes on a shared machine hits both
// sides alike. The reported metric "ratio" is throughput(A)/throughput(B)
// for the pair named A-vs-B; ns/op and MB/s are of both sides together.
func BenchmarkPaired(b *testing.B) {
	data := make([]byte, benchFile)
	buf := make([]byte, benchFile)
	seqEng := benchEngine(b, benchChunk, ParallelOptions{})
	parEng := benchEngine(b, benchChunk, ParallelOptions{Enabled: true})
	aead := rawGCM(b)
	nonce, ad := make([]byte, 16), make([]byte, 25)
	sealed := make([]byte, rawPiece+16)
	var chunks [][]byte
	for off := 0; off < benchFile; off += rawPiece {
		chunks = append(chunks, aead.Seal(nil, nonce, data[off:off+rawPiece], ad))
	}
	rawSeal := func(b *testing.B) {
		for off := 0; off < benchFile; off += rawPiece {
			aead.Seal(sealed[:0], nonce, data[off:off+rawPiece], ad)
		}
	}
	rawOpen := func(b *testing.B) {
		for _, c := range chunks {
			if _, err := aead.Open(buf[:0], nonce, c, ad); err != nil {
				b.Fatal(err)
			}
		}
	}
	rawSeal2 := func(b *testing.B) {
		var wg sync.WaitGroup
		for half := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := make([]byte, rawPiece+16)
				for off := half * benchFile / 2; off < (half+1)*benchFile/2; off += rawPiece {
					aead.Seal(out[:0], nonce, data[off:off+rawPiece], ad)
				}
			}()
		}
		wg.Wait()
	}
	writer := func(e *Engine, req int) func(*testing.B) {
		m := NewMemBacking()
		return func(b *testing.B) { writeNew(b, e, m, data, req) }
	}
	reader := func(e *Engine, req int) func(*testing.B) {
		m := NewMemBacking()
		writeNew(b, e, m, data, benchFile)
		f := openMem(b, e, m)
		return func(b *testing.B) { readWhole(b, f, buf, req) }
	}
	pairs := []struct {
		name string
		a, b func(*testing.B)
	}{
		{"seqwrite-vs-rawseal", writer(seqEng, benchFile), rawSeal},
		{"seqwrite128k-vs-rawseal", writer(seqEng, 128<<10), rawSeal},
		{"seqwrite1m-vs-rawseal", writer(seqEng, 1<<20), rawSeal},
		{"seqread-vs-rawopen", reader(seqEng, benchFile), rawOpen},
		{"seqread128k-vs-rawopen", reader(seqEng, 128<<10), rawOpen},
		{"parwrite-vs-seqwrite", writer(parEng, benchFile), writer(seqEng, benchFile)},
		{"parwrite1m-vs-seqwrite1m", writer(parEng, 1<<20), writer(seqEng, 1<<20)},
		{"parwrite128k-vs-seqwrite128k", writer(parEng, 128<<10), writer(seqEng, 128<<10)},
		{"parread-vs-seqread", reader(parEng, benchFile), reader(seqEng, benchFile)},
		{"parread1m-vs-seqread1m", reader(parEng, 1<<20), reader(seqEng, 1<<20)},
		{"rawseal2-vs-rawseal", rawSeal2, rawSeal},
	}
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			p.a(b) // warm pools and caches
			p.b(b)
			var ta, tb time.Duration
			b.SetBytes(2 * benchFile)
			for b.Loop() {
				t0 := time.Now()
				p.a(b)
				t1 := time.Now()
				p.b(b)
				ta += t1.Sub(t0)
				tb += time.Since(t1)
			}
			b.ReportMetric(float64(tb)/float64(ta), "ratio")
		})
	}
}
