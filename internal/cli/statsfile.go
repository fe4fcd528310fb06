package cli

import (
	"fmt"
	"os"
	"runtime"
	"time"
)

// statsFileEnv names the file a mount daemon writes its goroutine count
// to, once a second, when the variable is set (off by default). It is for
// bench/soak.sh, which watches a long-running daemon for leaks: RSS and
// open fds are in /proc, goroutines are not. A file, rather than a pprof
// listener, keeps the daemon free of a network port and of net/http.
const statsFileEnv = "ENCRYPTFS_STATS_FILE"

// startStatsFile writes "goroutines N" to path once a second until stop is
// called; with path empty it does nothing. The file is replaced whole
// (rename), so a reader never sees half a line.
func startStatsFile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			tmp := path + ".tmp"
			if os.WriteFile(tmp, fmt.Appendf(nil, "goroutines %d\n", runtime.NumGoroutine()), 0o644) == nil {
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
