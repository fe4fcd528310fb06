package fresh

import (
	"sync/atomic"
	"testing"
	"time"
)

// quietVault is a Vault with just what awaitQuiet uses: activity counts
// its calls from busy on (every call a new count while busy is set).
func quietVault(quiet, maxDelay time.Duration, busy *atomic.Bool) *Vault {
	var n atomic.Uint64
	return &Vault{
		o: Options{Quiet: quiet, MaxDelay: maxDelay},
		r: Reader{Activity: func() uint64 {
			if busy.Load() {
				return n.Add(1)
			}
			return n.Load()
		}},
		stop: make(chan struct{}),
	}
}

// TestAwaitQuiet: a timer batch waits while requests flow, for at most
// MaxDelay; it goes once a Quiet period passes without one; Close ends
// the wait.
func TestAwaitQuiet(t *testing.T) {
	t.Run("busy to the end: MaxDelay", func(t *testing.T) {
		var busy atomic.Bool
		busy.Store(true)
		v := quietVault(5*time.Millisecond, 300*time.Millisecond, &busy)
		start := time.Now()
		if !v.awaitQuiet() {
			t.Fatal("stopped without a Close")
		}
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Fatalf("batch after %v of constant requests, want MaxDelay (300ms)", d)
		}
	})
	t.Run("busy, then quiet", func(t *testing.T) {
		var busy atomic.Bool
		busy.Store(true)
		v := quietVault(10*time.Millisecond, time.Hour, &busy)
		go func() {
			time.Sleep(200 * time.Millisecond)
			busy.Store(false)
		}()
		start := time.Now()
		done := make(chan bool)
		go func() { done <- v.awaitQuiet() }()
		select {
		case ok := <-done:
			if !ok {
				t.Fatal("stopped without a Close")
			}
		case <-time.After(time.Minute):
			close(v.stop)
			t.Fatal("no batch a minute after the requests stopped")
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Fatalf("batch after %v, while requests still flowed (200ms)", d)
		}
	})
	t.Run("quiet at once", func(t *testing.T) {
		var busy atomic.Bool
		v := quietVault(10*time.Millisecond, time.Hour, &busy)
		if !v.awaitQuiet() {
			t.Fatal("stopped without a Close")
		}
	})
	t.Run("Close during the wait", func(t *testing.T) {
		var busy atomic.Bool
		busy.Store(true)
		v := quietVault(5*time.Millisecond, time.Hour, &busy)
		time.AfterFunc(50*time.Millisecond, func() { close(v.stop) })
		if v.awaitQuiet() {
			t.Fatal("the wait ended in a batch, not by Close")
		}
	})
	t.Run("no activity count, or Quiet < 0: at once", func(t *testing.T) {
		var busy atomic.Bool
		busy.Store(true)
		v := quietVault(-1, time.Hour, &busy)
		if !v.awaitQuiet() {
			t.Fatal("stopped without a Close")
		}
		v = &Vault{o: Options{Quiet: time.Millisecond, MaxDelay: time.Hour}, stop: make(chan struct{})}
		if !v.awaitQuiet() {
			t.Fatal("stopped without a Close")
		}
	})
}
