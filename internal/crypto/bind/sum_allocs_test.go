package bind

import (
	"strings"
	"testing"
)

// A binding costs no allocation (macpool.Pool.Sum): one is made per file
// created and checked per file opened.
func TestSumNoAllocs(t *testing.T) {
	b, err := New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, IDSize)
	p := Place{ParentID: make([]byte, IDSize), EncName: strings.Repeat("x", 60)}
	b.Sum(KindFile, id, p)
	if n := testing.AllocsPerRun(100, func() { b.Sum(KindFile, id, p) }); n > 0 {
		t.Fatalf("%v allocations per Sum", n)
	}
}
