package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestStatsFile: with a path, the daemon's stats file holds its goroutine
// count (what bench/soak.sh samples); without one nothing is written.
func TestStatsFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stats")
	stop := startStatsFile(p)
	defer stop()
	var b []byte
	for range 50 {
		if b, _ = os.ReadFile(p); len(b) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !regexp.MustCompile(`^goroutines [1-9][0-9]* heaplive [0-9]+\n$`).Match(b) {
		t.Fatalf("stats file: %q", b)
	}
	startStatsFile("")() // off: no file, no goroutine
}
