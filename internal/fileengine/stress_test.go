package fileengine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// TestConcurrentStress runs several goroutines on one File:
//   - each writer owns a region whose edges share chunks with its neighbours
//     (so concurrent read-modify-writes of one chunk would lose data if the
//     locking were wrong) and checks its own reads;
//   - a shared region is filled with one byte value per write under a model
//     lock (last writer wins) and read without it (a read must never see two
//     values: writes are atomic with respect to reads);
//   - one goroutine truncates and writes in the tail beyond the owned regions,
//     re-sealing the chunk it shares with the last owned region.
//
// At the end the whole file is compared with the model.
func TestConcurrentStress(t *testing.T) {
	for _, par := range []bool{false, true} {
		t.Run(fmt.Sprintf("par%v", par), func(t *testing.T) {
			opts := sequential(12)
			if par {
				opts = parallel(12)
			}
			stress(t, NewEngine(newTestSuite(t, content.AES256GCM, 4<<10), opts))
		})
	}
}

func stress(t *testing.T, e *Engine) {
	const (
		writers = 4
		region  = 3*4096/2 + 17 // not chunk aligned: neighbours share chunks
		shared  = 5000
		iters   = 60
	)
	sharedOff := int64(writers * region)
	base := sharedOff + shared // the tail goroutine never truncates below this
	f := openMem(t, e, NewMemBacking())
	defer f.Close()
	mustWrite(t, f, make([]byte, base), 0)

	owned := make([][]byte, writers) // owned[g] is only touched by goroutine g
	for g := range owned {
		owned[g] = make([]byte, region)
	}
	var modelMu sync.Mutex
	sharedModel := make([]byte, shared)
	var tailModel []byte // beyond base; only the tail goroutine touches it

	var wg sync.WaitGroup
	errs := make(chan error, writers+2)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			start := int64(g * region)
			for range iters {
				off := r.IntN(region)
				n := 1 + r.IntN(region-off)
				p := randomBytes(r, n)
				if _, err := f.WriteAt(p, start+int64(off)); err != nil {
					errs <- err
					return
				}
				copy(owned[g][off:], p)
				got := make([]byte, region)
				if _, err := f.ReadAt(got, start); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, owned[g]) {
					errs <- fmt.Errorf("writer %d: its region was changed by someone else", g)
					return
				}
				// shared region: last writer wins, reads see one value
				v := byte(g*iters + r.IntN(iters) + 1)
				modelMu.Lock()
				if _, err := f.WriteAt(bytes.Repeat([]byte{v}, shared), sharedOff); err != nil {
					modelMu.Unlock()
					errs <- err
					return
				}
				clear(sharedModel)
				for i := range sharedModel {
					sharedModel[i] = v
				}
				modelMu.Unlock()
				sh := make([]byte, shared)
				if _, err := f.ReadAt(sh, sharedOff); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(sh, bytes.Repeat(sh[:1], shared)) {
					errs <- fmt.Errorf("writer %d: torn read of the shared region", g)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(77, 1))
		for range iters {
			size := base + r.Int64N(6*4096)
			if err := f.Truncate(size); err != nil {
				errs <- err
				return
			}
			if int64(len(tailModel)) > size-base {
				tailModel = tailModel[:size-base]
			} else {
				tailModel = append(tailModel, make([]byte, size-base-int64(len(tailModel)))...)
			}
			off := r.Int64N(4 * 4096)
			p := randomBytes(r, 1+r.IntN(3000))
			if _, err := f.WriteAt(p, base+off); err != nil {
				errs <- err
				return
			}
			if end := off + int64(len(p)); end > int64(len(tailModel)) {
				tailModel = append(tailModel, make([]byte, end-int64(len(tailModel)))...)
			}
			copy(tailModel[off:], p)
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var want []byte
	for g := range owned {
		want = append(want, owned[g]...)
	}
	want = append(want, sharedModel...)
	want = append(want, tailModel...)
	got, err := readAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("final content differs from the model (%d vs %d bytes)", len(got), len(want))
	}
}
