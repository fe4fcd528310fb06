package dircursor

import (
	"testing"

	"golang.org/x/sys/unix"
)

type list []string

func (l list) Len() int { return len(l) }
func (l list) Entry(i int) (string, uint32, uint64) {
	return l[i], unix.S_IFREG, uint64(100 + i)
}

func TestCursor(t *testing.T) {
	l := list{"a", "b"}
	var c Cursor
	var names []string
	var offs []uint64
	for e := c.Next(7, l); e != nil; e = c.Next(7, l) {
		names = append(names, e.Name)
		offs = append(offs, e.Off)
		if e.Name == "b" && (c.Last() != 1 || e.Ino != 101) {
			t.Fatalf("after b: Last %d, ino %d", c.Last(), e.Ino)
		}
	}
	if got := len(names); got != 4 || names[0] != "." || names[1] != ".." || names[2] != "a" || names[3] != "b" {
		t.Fatalf("names %q", names)
	}
	// Seeking to the offset of "a" continues with "b".
	if c.Seek(offs[2]) {
		t.Fatal("not a rewind")
	}
	if e := c.Next(7, l); e == nil || e.Name != "b" {
		t.Fatalf("after seek: %+v", e)
	}
	if !c.Seek(0) {
		t.Fatal("Seek(0) is a rewind")
	}
	if e := c.Next(7, l); e == nil || e.Name != "." || e.Ino != 7 {
		t.Fatalf("after rewind: %+v", e)
	}
}
