package fresh

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestBackgroundNice: the batches' thread runs at nice batchNice, and
// the other threads of the process keep their priority.
func TestBackgroundNice(t *testing.T) {
	before, err := threadNice()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int)
	go func() {
		background()
		n, err := threadNice()
		if err != nil {
			n = -100
		}
		got <- n
	}()
	if n := <-got; n != batchNice {
		t.Fatalf("batch thread at nice %d, want %d", n, batchNice)
	}
	if n, err := threadNice(); err != nil || n != before {
		t.Fatalf("test thread moved from nice %d to %d", before, n)
	}
}

// threadNice reads the calling thread's nice value (field 19 of
// /proc/thread-self/stat). The caller's goroutine must stay on its thread
// for the answer to mean anything: background locks it; the test's own
// read compares a value that is the same on every other thread.
func threadNice() (int, error) {
	b, err := os.ReadFile("/proc/thread-self/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	return strconv.Atoi(f[16]) // field 19; f[0] is field 3
}
