package vault

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentUse runs writers, readers and listings at once (for -race)
// and checks every file afterwards.
func TestConcurrentUse(t *testing.T) {
	v, _ := newTestVault(t)
	if err := v.Mkdir("d", 0o700); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 4, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*2)
	for w := range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			f, err := v.Create(fmt.Sprintf("d/f%d", w))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			for r := range rounds {
				if _, err := f.WriteAt(bytes.Repeat([]byte{byte(w)}, 3000), int64(r*3000)); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range rounds {
				if _, err := v.ReadDir("d"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := range workers {
		got, err := v.ReadFile(fmt.Sprintf("d/f%d", w))
		if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(w)}, rounds*3000)) {
			t.Fatalf("file %d: %v (len %d)", w, err, len(got))
		}
	}
}
