package cli

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"time"
)

// statsFileEnv names the file a mount daemon writes its goroutine count
// to, once a second, when the variable is set (off by default). It is for
// bench/soak.sh, which watches a long-running daemon for leaks: RSS and
// open fds are in /proc, goroutines are not. A file, rather than a pprof
// listener, keeps the daemon free of a network port and of net/http.
const statsFileEnv = "ENCRYPTFS_STATS_FILE"

// startStatsFile writes "goroutines N heaplive B" to path once a second
// until stop is called; with path empty it does nothing. heaplive is the
// Go heap still reachable at the last GC: unlike RSS it does not include
// memory the runtime has freed but not yet returned, so it is the figure
// that shows a leak. The file is replaced whole (rename), so a reader
// never sees half a line.
func startStatsFile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	done := make(chan struct{})
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			tmp := path + ".tmp"
			metrics.Read(live)
			var heap uint64
			if live[0].Value.Kind() == metrics.KindUint64 {
				heap = live[0].Value.Uint64()
			}
			if os.WriteFile(tmp, fmt.Appendf(nil, "goroutines %d heaplive %d\n", runtime.NumGoroutine(), heap), 0o644) == nil {
				os.Rename(tmp, path)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done) }
}
